// File: stage_factory.cpp
// The family dispatch of whale-run's models: the stage module and the parameter layouts.
#include "model/gpt_parameters.h"
#include "model/llama_parameters.h"
#include "whale/exec/model/stage_module.h"
#include "whale/exec/model/tensor_shard.h"
#include "whale/plan/error.h"

namespace whale::exec {
namespace {

[[noreturn]] void refuse_family(const plan::Model& model) {
  throw Error(model.source_file, "family",
              "a family whale-run trains (gpt or llama), got '" + model.family + "'",
              "simulate it with whale-sim");
}

}  // namespace

std::unique_ptr<StageModule> make_stage_module(const plan::Model& model,
                                               const StageModuleOptions& options,
                                               Backend& backend, Communicator* tp_comm) {
  if (model.family == "gpt") return make_gpt_stage(model, options, backend, tp_comm);
  if (model.family == "llama") return make_llama_stage(model, options, backend, tp_comm);
  refuse_family(model);
}

bool ties_token_table(const plan::Model& model) {
  return model.family == "llama" && model.tie_embeddings;
}

TensorShard parameter_shard(const plan::Model& model, const std::string& name, int tp_rank,
                            int tp_size) {
  if (model.family == "gpt") return gpt_parameter_shard(model, name, tp_rank, tp_size);
  if (model.family == "llama") return llama::llama_parameter_shard(model, name, tp_rank, tp_size);
  refuse_family(model);
}

}  // namespace whale::exec
