# End-to-end tests of whale-run (included by tests/exec/CMakeLists.txt).
# Every test runs build/apps/* and so requires the fixture cli_tools (tests/cli), which builds them.
# - equality_<plan>: every tiny plan trains 20 steps equal to single.yaml (scripts/equality.sh),
#   a tiny Llama plan (equality_llama_<plan>) equal to its single-device plan, a bf16 plan
#   equal to the bf16 plan it refines;
# - clip (gradient clipping), schedule (a learning-rate schedule and weight decay), resume, bad input (exit 2, nothing overwritten), signals, trace, buckets (whale-run and
#   whale-sim reduce the same gradient buckets), split_ops (both list the same zb-h1 passes),
#   compare (whale-sim --compare against whale-run's trace): scripts/equality_cli.sh.
if(NOT TARGET whale-run)
  return()
endif()
set(WHALE_MPI_ENV "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OMPI_MCA_rmaps_base_oversubscribe=1")

# plan:ranks for every plan of configs/plans/tiny except the reference itself.
set(WHALE_TINY_PLANS dp2:2 dp2-zero:2 dp3-uneven:3 tp2:2 pp2-gpipe:2 pp2-1f1b:2
    pp2-1f1b-recompute:2 pp4-interleaved:4 wave:2 hybrid-8:8 hybrid-8-zero-recompute:8 bridges:7
    buckets:4 pp2-zb-h1:2 hybrid-zb-h1:4 tp2-sp:2 tp2-pp2-sp:4 dp2-zero2:2 dp3-uneven-zero2:3
    tp2-dp2-sp-zero2:4 mixed-tp:3)
foreach(entry ${WHALE_TINY_PLANS})
  string(REPLACE ":" ";" parts ${entry})
  list(GET parts 0 plan)
  list(GET parts 1 ranks)
  add_test(NAME equality_${plan}
    COMMAND bash scripts/equality.sh $<TARGET_FILE:whale-run> configs/plans/tiny/${plan}.yaml ${ranks} 20
    WORKING_DIRECTORY ${WHALE_SOURCE_DIR})
  set_tests_properties(equality_${plan} PROPERTIES TIMEOUT 300 ENVIRONMENT "${WHALE_MPI_ENV}"
    FIXTURES_REQUIRED cli_tools)
endforeach()

# test:plan:ranks:reference:reference_ranks[:steps] (steps 20 unless given), plan and reference
# under configs/plans/: the tiny
# Llama's plans against its single-device plans (the tied model's single.yaml, the untied
# model's single-untied.yaml); bf16 plans against the bf16 plan they refine (equality.sh says
# why not against single-bf16.yaml).
set(WHALE_REFERENCE_PLANS
    llama_tp2:tiny-llama/tp2:2:tiny-llama/single:1
    llama_dp3-uneven:tiny-llama/dp3-uneven:3:tiny-llama/single:1
    llama_single-hf:tiny-llama/single-hf:1:tiny-llama/single:1
    llama_pp2:tiny-llama/pp2:2:tiny-llama/single:1
    llama_pp2-interleaved:tiny-llama/pp2-interleaved:2:tiny-llama/single:1
    llama_wave-tied-dp2:tiny-llama/wave-tied-dp2:4:tiny-llama/single:1
    # ZeRO-2 with the tied table's copies on other devices and on the same ones.
    llama_pp2-dp2-zero2:tiny-llama/pp2-dp2-zero2:4:tiny-llama/single:1
    llama_wave-tied-dp2-zero2:tiny-llama/wave-tied-dp2-zero2:4:tiny-llama/single:1
    llama_hybrid-uneven:tiny-llama/hybrid-uneven:8:tiny-llama/single:1
    llama_pp2-gpipe-untied:tiny-llama/pp2-gpipe-untied:2:tiny-llama/single-untied:1
    llama_tp2-pp2-zb-h1:tiny-llama/tp2-pp2-zb-h1:4:tiny-llama/single:1
    llama_tp2-sp:tiny-llama/tp2-sp:2:tiny-llama/single:1
    llama_tp2-pp2-zb-h1-sp:tiny-llama/tp2-pp2-zb-h1-sp:4:tiny-llama/single:1
    # Replicas at different tp in both stages, with the tied head (docs/run.md).
    llama_mixed-tp-pp2:tiny-llama/mixed-tp-pp2:6:tiny-llama/single:1
    # The tiny GPT trained with SGD: the momentum buffer sharded (ZeRO-2 over uneven replicas,
    # ZeRO-1 after a tp2 stage) against its single-device plan.
    sgd_dp3-uneven-zero2:tiny-sgd/dp3-uneven-zero2:3:tiny-sgd/single:1
    sgd_tp2-pp2-zero:tiny-sgd/tp2-pp2-zero:4:tiny-sgd/single:1
    # Mixed tp in the first of two stages, the bridge gathering both replicas for the second.
    sgd_mixed-tp-pp2:tiny-sgd/mixed-tp-pp2:4:tiny-sgd/single:1
    tp2-sp-bf16:tiny/tp2-sp-bf16:2:tiny/tp2-bf16:2
    dp2-zero2-bf16:tiny/dp2-zero2-bf16:2:tiny/dp2-zero-bf16:2
    # Mixture-of-experts plans (docs/moe.md, "whale-run"), 5 steps each, against the single-device
    # plan whose micro-batches hold one replica's samples (capacity and the auxiliary loss
    # count per micro-batch and replica).
    moe_ep2:tiny-moe/ep2:2:tiny-moe/single-mb6:1:5
    moe_ep2_dropless:tiny-moe/ep2-dropless:2:tiny-moe/single-dropless-mb6:1:5
    moe_ep2_dp2_pp2:tiny-moe/ep2-dp2-pp2:8:tiny-moe/single-mb3:1:5
    # Uneven expert counts (3 and 1 of the 4 experts per expert-parallel group).
    moe_ep2_uneven:tiny-moe/ep2-uneven:2:tiny-moe/single-mb6:1:5
    moe_ep2_dp2_uneven:tiny-moe/ep2-dp2-uneven:4:tiny-moe/single-mb3:1:5
    llama_moe_ep2:tiny-llama-moe/ep2:2:tiny-llama-moe/single-mb6:1:5
    llama_moe_pp2-zb-h1-recompute:tiny-llama-moe/pp2-zb-h1-recompute:2:tiny-llama-moe/single-mb6:1:5
    # The sigmoid_bias router: each step's bias update from the loads of the whole global batch.
    moe_sigmoid_ep2_dp2:tiny-moe-sigmoid/ep2-dp2:4:tiny-moe-sigmoid/single-mb3:1:5
    moe_sigmoid_pp2_recompute:tiny-moe-sigmoid/pp2-recompute:2:tiny-moe-sigmoid/single-mb3:1:5
    # Expert tensor parallelism (expert_tp = tp): the experts split over the tensor group.
    moe_tp2:tiny-moe/tp2:2:tiny-moe/single-mb6:1:5
    moe_tp2_ep2:tiny-moe/tp2-ep2:4:tiny-moe/single-mb6:1:5
    llama_moe_tp2:tiny-llama-moe/tp2:2:tiny-llama-moe/single-mb6:1:5
    moe_sigmoid_tp2_ep2:tiny-moe-sigmoid/tp2-ep2:4:tiny-moe-sigmoid/single-mb6:1:5
    # MoE parallel folding (expert_tp below tp: the experts' layout apart from attention's)
    moe_tp2_ep2_folded:tiny-moe/tp2-ep2-folded:2:tiny-moe/single-mb6:1:5
    moe_tp2_dp2_ep2_folded:tiny-moe/tp2-dp2-ep2-folded:4:tiny-moe/single-mb6:1:5
    moe_tp4_ep2_etp2_folded:tiny-moe/tp4-ep2-etp2-folded:4:tiny-moe/single-mb6:1:5
    llama_moe_tp2_ep2_folded:tiny-llama-moe/tp2-ep2-folded:2:tiny-llama-moe/single-mb6:1:5
    # ZeRO with the experts apart: their optimizer state (and gradients) sharded over the
    # expert-dp group, the rest over dp
    moe_ep2_dp2_uneven_zero1:tiny-moe/ep2-dp2-uneven-zero1:4:tiny-moe/single-mb3:1:5
    moe_ep2_dp2_uneven_zero2:tiny-moe/ep2-dp2-uneven-zero2:4:tiny-moe/single-mb3:1:5
    moe_tp2_dp2_ep2_folded_zero2:tiny-moe/tp2-dp2-ep2-folded-zero2:4:tiny-moe/single-mb6:1:5
    # Experts replicated where attention is not (dp 1, expert dp 2): the experts' gradients
    # alone are reduced (reduce-scattered under ZeRO-2) over the expert-dp group
    moe_tp2_expert_dp2:tiny-moe/tp2-expert-dp2:2:tiny-moe/single-mb6:1:5
    moe_tp2_expert_dp2_zero2:tiny-moe/tp2-expert-dp2-zero2:2:tiny-moe/single-mb6:1:5
    # Experts split wider than attention (expert_tp above tp): the expert-tp group's tensor
    # groups gather each other's rows and sum their shards' outputs back
    moe_dp2_etp2:tiny-moe/dp2-etp2:2:tiny-moe/single-mb6:1:5
    # 4 steps: routing is discontinuous (top-k and capacity ties), and at step 5 under seed 7 a
    # near-tie falls the other way between the two summation orders (steps 1-4 equal within
    # 1e-9; seeds 8 and 9 equal within 1e-9 over 5 steps).
    moe_dp4_ep2_etp2:tiny-moe/dp4-ep2-etp2:4:tiny-moe/single-mb3:1:4
    moe_tp2_dp2_etp4_sp:tiny-moe/tp2-dp2-etp4-sp:4:tiny-moe/single-mb6:1:5
    # Sequence parallelism in MoE stages: the layer gathers its rows and reduce-scatters its output
    moe_tp2_sp:tiny-moe/tp2-sp:2:tiny-moe/single-mb6:1:5
    moe_tp2_dp2_ep2_folded_sp:tiny-moe/tp2-dp2-ep2-folded-sp:4:tiny-moe/single-mb6:1:5
    llama_moe_tp2_sp:tiny-llama-moe/tp2-sp:2:tiny-llama-moe/single-mb6:1:5)
foreach(entry ${WHALE_REFERENCE_PLANS})
  string(REPLACE ":" ";" parts ${entry})
  list(GET parts 0 name)
  list(GET parts 1 plan)
  list(GET parts 2 ranks)
  list(GET parts 3 reference)
  list(GET parts 4 reference_ranks)
  set(steps 20)
  list(LENGTH parts fields)
  if(fields GREATER 5)
    list(GET parts 5 steps)
  endif()
  add_test(NAME equality_${name}
    COMMAND bash scripts/equality.sh $<TARGET_FILE:whale-run> configs/plans/${plan}.yaml ${ranks} ${steps}
            configs/plans/${reference}.yaml ${reference_ranks}
    WORKING_DIRECTORY ${WHALE_SOURCE_DIR})
  set_tests_properties(equality_${name} PROPERTIES TIMEOUT 300 ENVIRONMENT "${WHALE_MPI_ENV}"
    FIXTURES_REQUIRED cli_tools)
endforeach()

foreach(check clip schedule resume bad_input signal trace layer_times learning buckets split_ops moe moe_layouts
              compare)
  add_test(NAME whale_run_${check}
    COMMAND bash scripts/equality_cli.sh ${check} $<TARGET_FILE:whale-run> $<TARGET_FILE:whale-sim>
    WORKING_DIRECTORY ${WHALE_SOURCE_DIR})
  set_tests_properties(whale_run_${check} PROPERTIES TIMEOUT 300 ENVIRONMENT "${WHALE_MPI_ENV}"
    FIXTURES_REQUIRED cli_tools)
endforeach()

# Crash safety: checkpoint fallback, a failed write on a full disk, a rank killed mid-run.
foreach(check fallback disk_full kill_rank)
  add_test(NAME whale_run_crash_${check}
    COMMAND bash scripts/crash_safety.sh ${check} $<TARGET_FILE:whale-run>
    WORKING_DIRECTORY ${WHALE_SOURCE_DIR})
  set_tests_properties(whale_run_crash_${check} PROPERTIES TIMEOUT 120 ENVIRONMENT "${WHALE_MPI_ENV}"
    FIXTURES_REQUIRED cli_tools)
endforeach()

# Placement across claimed hosts (WHALE_HOST_NAME) and the launch files: tests/exec/placement.sh.
foreach(check two_hosts wrong_host wrong_device launch_files)
  add_test(NAME whale_run_placement_${check}
    COMMAND bash tests/exec/placement.sh ${check} $<TARGET_FILE_DIR:whale-run>
    WORKING_DIRECTORY ${WHALE_SOURCE_DIR})
  set_tests_properties(whale_run_placement_${check} PROPERTIES TIMEOUT 300 ENVIRONMENT "${WHALE_MPI_ENV}"
    FIXTURES_REQUIRED cli_tools)
endforeach()
