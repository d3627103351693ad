# End-to-end tests of whale-run (included by tests/exec/CMakeLists.txt).
# Every test runs build/apps/* and so requires the fixture cli_tools (tests/cli), which builds them.
# - equality_<plan>: every tiny plan trains 20 steps equal to single.yaml (scripts/equality.sh);
# - resume, bad input (exit 2, nothing overwritten), signals, trace, buckets (whale-run and
#   whale-sim reduce the same gradient buckets), split_ops (both list the same zb-h1 passes):
#   scripts/equality_cli.sh.
if(NOT TARGET whale-run)
  return()
endif()
set(WHALE_MPI_ENV "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OMPI_MCA_rmaps_base_oversubscribe=1")

# plan:ranks for every plan of configs/plans/tiny except the reference itself.
set(WHALE_TINY_PLANS dp2:2 dp2-zero:2 dp3-uneven:3 tp2:2 pp2-gpipe:2 pp2-1f1b:2
    pp2-1f1b-recompute:2 pp4-interleaved:4 wave:2 hybrid-8:8 hybrid-8-zero-recompute:8 bridges:7
    buckets:4 pp2-zb-h1:2 hybrid-zb-h1:4)
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

# plan:ranks:reference for the tiny Llama's plans (configs/plans/tiny-llama): the tied model's
# plans against single.yaml, the untied model's against single-untied.yaml.
set(WHALE_TINY_LLAMA_PLANS tp2:2:single dp3-uneven:3:single single-hf:1:single pp2:2:single
    pp2-interleaved:2:single hybrid-uneven:8:single pp2-gpipe-untied:2:single-untied
    tp2-pp2-zb-h1:4:single)
foreach(entry ${WHALE_TINY_LLAMA_PLANS})
  string(REPLACE ":" ";" parts ${entry})
  list(GET parts 0 plan)
  list(GET parts 1 ranks)
  list(GET parts 2 reference)
  add_test(NAME equality_llama_${plan}
    COMMAND bash scripts/equality.sh $<TARGET_FILE:whale-run> configs/plans/tiny-llama/${plan}.yaml
            ${ranks} 20 configs/plans/tiny-llama/${reference}.yaml
    WORKING_DIRECTORY ${WHALE_SOURCE_DIR})
  set_tests_properties(equality_llama_${plan} PROPERTIES TIMEOUT 300 ENVIRONMENT "${WHALE_MPI_ENV}"
    FIXTURES_REQUIRED cli_tools)
endforeach()

foreach(check resume bad_input signal trace learning buckets split_ops)
  add_test(NAME whale_run_${check}
    COMMAND bash scripts/equality_cli.sh ${check} $<TARGET_FILE:whale-run> $<TARGET_FILE:whale-sim>
    WORKING_DIRECTORY ${WHALE_SOURCE_DIR})
  set_tests_properties(whale_run_${check} PROPERTIES TIMEOUT 300 ENVIRONMENT "${WHALE_MPI_ENV}"
    FIXTURES_REQUIRED cli_tools)
endforeach()

# whale-run refuses a plan with a strategy it does not execute yet (sequence parallelism): one
# line naming the field, exit 2.
add_test(NAME whale_run_refuses_unexecuted_strategy
  COMMAND bash -c "out=$(\"$0\" \"$1\" --data data/corpus.txt 2>&1); rc=$?; echo \"$out\"; [ $rc -eq 2 ] && echo \"$out\" | grep -q 'stages\\[0\\].sequence_parallel: only strategies whale-run executes'"
          $<TARGET_FILE:whale-run> configs/validation/korthikanti-2022/175b-64gpu-sequence-parallel-selective.yaml
  WORKING_DIRECTORY ${WHALE_SOURCE_DIR})
set_tests_properties(whale_run_refuses_unexecuted_strategy PROPERTIES TIMEOUT 60 ENVIRONMENT "${WHALE_MPI_ENV}"
    FIXTURES_REQUIRED cli_tools)
# Crash safety: checkpoint fallback, a failed write on a full disk, a rank killed mid-run.
foreach(check fallback disk_full kill_rank)
  add_test(NAME whale_run_crash_${check}
    COMMAND bash scripts/crash_safety.sh ${check} $<TARGET_FILE:whale-run>
    WORKING_DIRECTORY ${WHALE_SOURCE_DIR})
  set_tests_properties(whale_run_crash_${check} PROPERTIES TIMEOUT 120 ENVIRONMENT "${WHALE_MPI_ENV}"
    FIXTURES_REQUIRED cli_tools)
endforeach()
