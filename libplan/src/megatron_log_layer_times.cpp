// File: megatron_log_layer_times.cpp
// load_megatron_log_layer_times: per-stage forward and backward compute times of a Megatron-LM
// log, per micro-batch, spread over each stage's layers by their flops (layer_times_import.h,
// docs/layer-times.md).
#include <cstddef>
#include <string>
#include <vector>

#include "megatron_log.h"
#include "whale/plan/error.h"
#include "whale/plan/layer_times_import.h"
#include "whale/plan/model.h"

namespace whale::plan {
namespace {

bool is_set(const std::string& printed) { return !printed.empty() && printed != "None" && printed != "False"; }

/// The model Megatron trained, from its arguments: gpt, or llama under --swiglu.
Model megatron_model(const MegatronLog& log) {
  Model model;
  model.name = "megatron";
  model.family = log.text("swiglu") == "True" ? "llama" : "gpt";
  model.num_layers = log.integer("num_layers");
  model.hidden = log.integer("hidden_size");
  model.heads = log.integer("num_attention_heads");
  model.ffn_hidden = is_set(log.text("ffn_hidden_size")) ? log.integer("ffn_hidden_size") : 4 * model.hidden;
  if (log.text("group_query_attention") == "True") model.kv_heads = log.integer("num_query_groups");
  model.sequence = log.integer("seq_length");
  model.vocabulary = log.padded_vocab_size > 0 ? log.padded_vocab_size : log.integer("padded_vocab_size");
  model.tie_embeddings = log.text("untie_embeddings_and_output_weights") != "True";
  generate_layers(model, Precision::bf16);  // flops and parameters do not depend on the precision
  return model;
}

/// The blocks each pipeline stage holds: --decoder-first/last-pipeline-num-layers where given,
/// the rest evenly.
std::vector<int> blocks_per_stage(const MegatronLog& log, int pp, int num_layers) {
  std::vector<int> blocks(static_cast<std::size_t>(pp), 0);
  int left = num_layers, even_stages = pp;
  if (pp > 1 && is_set(log.text("decoder_first_pipeline_num_layers"))) {
    blocks.front() = log.integer("decoder_first_pipeline_num_layers");
    left -= blocks.front();
    --even_stages;
  }
  if (pp > 1 && is_set(log.text("decoder_last_pipeline_num_layers"))) {
    blocks.back() = log.integer("decoder_last_pipeline_num_layers");
    left -= blocks.back();
    --even_stages;
  }
  if (even_stages > 0 && (left < even_stages || left % even_stages != 0)) {
    throw Error(log.path, "arguments.num_layers", "layers that divide evenly over the pipeline stages, got " +
                std::to_string(num_layers) + " over " + std::to_string(pp), "a log of a run Megatron accepted");
  }
  for (int& b : blocks) {
    if (b == 0) b = even_stages > 0 ? left / even_stages : 0;
  }
  return blocks;
}

/// A timer of one stage in one block, in ms per iteration: the median over the stage's ranks
/// (`all`), or the max across ranks (one stage). -1 when the block does not have it.
double stage_ms(const MegatronLog& log, const MegatronTimerBlock& block, const std::string& timer, int stage,
                int pp, int world) {
  const auto it = block.find(timer);
  if (it == block.end()) return -1;
  if (!log.per_rank) return it->second.max_ms;
  std::vector<double> ranks;
  const int per_stage = world / pp;
  for (const auto& [rank, ms] : it->second.ms_by_rank) {
    if (rank / per_stage == stage) ranks.push_back(ms);
  }
  return ranks.empty() ? -1 : median_seconds(ranks);
}

/// A timer of one stage, in seconds per iteration: the median over the logged intervals after
/// the first (warm-up; all of them when there is one). Fails naming the timer when `required`
/// and no interval has it; else -1.
Seconds stage_seconds(const MegatronLog& log, const std::string& timer, int stage, int pp, int world, bool required) {
  std::vector<double> ms;
  for (std::size_t b = log.blocks.size() > 1 ? 1 : 0; b < log.blocks.size(); ++b) {
    const double t = stage_ms(log, log.blocks[b], timer, stage, pp, world);
    if (t > 0) ms.push_back(t);
  }
  if (ms.empty()) {
    if (!required) return -1;
    throw Error(log.path, timer, "the " + timer + " timer of pipeline stage " + std::to_string(stage) +
                " in the timer blocks", "run with --timing-log-level 2 (forward-compute, backward-compute)");
  }
  return median_seconds(ms) / 1000.0;
}

void check_supported(const MegatronLog& log, int pp) {
  if (pp > 1 && !log.per_rank) {
    throw Error(log.path, "timers", "per-rank timer blocks ('times across ranks (ms):') for a pipeline of " +
                std::to_string(pp) + " stages, got min/max across ranks",
                "run with --timing-log-option all: min and max do not say which stage took which time");
  }
  for (const char* name : {"virtual_pipeline_model_parallel_size", "rampup_batch_size"}) {
    if (is_set(log.text(name))) {
      throw Error(log.path, std::string("arguments.") + name, "None, got '" + log.text(name) + "'",
                  "interleaved pipelines and batch ramp-up are not read (docs/layer-times.md)");
    }
  }
  if (is_set(log.text("context_parallel_size")) && log.integer("context_parallel_size") != 1) {
    throw Error(log.path, "arguments.context_parallel_size", "1, got '" + log.text("context_parallel_size") + "'",
                "context parallelism is not read (docs/layer-times.md)");
  }
}

}  // namespace

LayerTimes load_megatron_log_layer_times(const std::string& path) {
  const MegatronLog log = load_megatron_log(path);
  const int tp = log.integer("tensor_model_parallel_size");
  const int pp = log.integer("pipeline_model_parallel_size");
  const int dp = log.integer("data_parallel_size");
  const int micro_batch = log.integer("micro_batch_size");
  const int global_batch = log.integer("global_batch_size");
  const int world = log.integer("world_size");
  check_supported(log, pp);
  if (world % pp != 0 || global_batch % (micro_batch * dp) != 0) {
    throw Error(path, "arguments", "world_size a multiple of the pipeline degree and global_batch_size of "
                "micro_batch_size x data_parallel_size", "a log of a run Megatron accepted");
  }
  const double micro_batches = global_batch / (micro_batch * dp);
  const Model model = megatron_model(log);
  const std::vector<int> blocks = blocks_per_stage(log, pp, model.num_layers);
  std::vector<Seconds> embedding_fwd, embedding_bwd, block_fwd, block_bwd, head_fwd, head_bwd, optimizer;
  int first = 0;  // the stage's first layer in model.layers
  for (int s = 0; s < pp; ++s) {
    const int end = first + blocks[static_cast<std::size_t>(s)] + (s == 0 ? 1 : 0) + (s == pp - 1 ? 1 : 0);
    Flops flops = 0;
    double parameters = 0;
    for (int l = first; l < end; ++l) {
      flops += model.layers[static_cast<std::size_t>(l)].forward_flops();
      parameters += model.layers[static_cast<std::size_t>(l)].parameters;
    }
    const Seconds fwd = stage_seconds(log, "forward-compute", s, pp, world, true) / micro_batches;
    const Seconds bwd = stage_seconds(log, "backward-compute", s, pp, world, true) / micro_batches;
    for (int l = first; l < end; ++l) {
      const Layer& layer = model.layers[static_cast<std::size_t>(l)];
      const double share = layer.forward_flops() / flops;
      if (share <= 0) continue;  // a layer without GEMMs (a gpt embedding) is left to the curves
      auto& f = layer.kind == LayerKind::embedding ? embedding_fwd : layer.kind == LayerKind::head ? head_fwd : block_fwd;
      auto& b = layer.kind == LayerKind::embedding ? embedding_bwd : layer.kind == LayerKind::head ? head_bwd : block_bwd;
      f.push_back(fwd * share);
      b.push_back(bwd * share);
    }
    const Seconds step = stage_seconds(log, "optimizer", s, pp, world, false);
    const double updated = parameters / tp / (log.text("use_distributed_optimizer") == "True" ? dp : 1);
    if (step > 0 && updated > 0) optimizer.push_back(step / updated);
    first = end;
  }
  LayerTimes out;
  out.source = path;
  const auto add = [&](LayerKind kind, const std::vector<Seconds>& f, const std::vector<Seconds>& b) {
    if (f.empty()) return;
    MeasuredLayerTime m;
    m.kind = kind;
    m.tp = tp;
    m.micro_batch = micro_batch;
    m.forward_s = median_seconds(f);
    m.backward_s = median_seconds(b);
    out.measurements.push_back(m);
  };
  add(LayerKind::embedding, embedding_fwd, embedding_bwd);
  add(LayerKind::transformer, block_fwd, block_bwd);
  add(LayerKind::head, head_fwd, head_bwd);
  if (!optimizer.empty()) out.optimizer_s_per_parameter = median_seconds(optimizer);
  return out;
}

}  // namespace whale::plan
