// File: checkpoint.cpp
// Checkpoint files (layout in checkpoint.h): encoding, checks and the `latest` marker.
#include "whale/exec/runtime/checkpoint.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "runtime/checkpoint_io.h"
#include "util/hashing.h"
#include "whale/plan/error.h"

namespace whale::exec {
namespace {

constexpr char kMagic[8] = {'W', 'H', 'A', 'L', 'E', 'C', 'K', 'P'};
constexpr uint32_t kVersion = 1;
constexpr std::size_t kHeaderBytes = 56;

template <typename T>
void put(std::string& out, T value) {
  char raw[sizeof(T)];
  std::memcpy(raw, &value, sizeof(T));  // little-endian hosts only (x86-64, aarch64)
  out.append(raw, sizeof(T));
}

template <typename T>
T get(const std::string& in, std::size_t offset) {
  T value;
  std::memcpy(&value, in.data() + offset, sizeof(T));
  return value;
}

std::string step_folder(const std::string& dir, int64_t step) {
  char name[32];
  std::snprintf(name, sizeof(name), "step-%08lld", static_cast<long long>(step));
  return dir + "/" + name;
}

void make_folder(const std::string& path) {
  if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST)
    throw Error(path, "", std::string("a folder that can be created: ") + std::strerror(errno));
}

}  // namespace

uint64_t plan_fingerprint(const plan::Plan& plan) {
  const plan::Model& m = plan.model;
  std::string text = m.family + " L" + std::to_string(m.num_layers) + " h" +
                     std::to_string(m.hidden) + " a" + std::to_string(m.heads) + " f" +
                     std::to_string(m.ffn_hidden) + " s" + std::to_string(m.sequence) + " v" +
                     std::to_string(m.vocabulary) + " mbs" + std::to_string(plan.micro_batch_size) +
                     " m" + std::to_string(plan.micro_batches);
  if (m.family == "llama")  // the hyperparameters that shape a Llama's parameters
    text += " kv" + std::to_string(m.kv_heads) + " qb" + std::to_string(m.qkv_bias) + " tie" +
            std::to_string(m.tie_embeddings);
  // The optimizer's state: SGD keeps one buffer where AdamW (and Adam, the same) keeps two; an
  // AdamW model's text is as before the optimizer counted, so its checkpoints stay readable.
  if (m.training.optimizer == "sgd") text += " sgd";
  if (m.moe)  // the experts' shapes and their routing
    text += " moe" + std::to_string(m.moe->experts) + "k" + std::to_string(m.moe->top_k) + "s" +
            std::to_string(m.moe->shared_experts) + "f" + std::to_string(m.moe->expert_ffn_hidden) +
            "c" + std::to_string(m.moe->capacity_factor) + "d" +
            std::to_string(m.moe->first_dense_layers) + "i" + std::to_string(m.moe->layer_interval) +
            (m.moe->router == plan::MoeRouter::sigmoid_bias ? " sigmoid_bias" : "");
  for (const plan::Stage& s : plan.stages) {
    if (s.ep > 1) text += " ep" + std::to_string(s.ep);
    if (m.moe && s.expert_tp_degree() != s.tp) text += " etp" + std::to_string(s.expert_tp_degree());
    for (int count : s.expert_counts) text += " ec" + std::to_string(count);  // uneven experts
    text += " [" + std::to_string(s.first_layer) + "," + std::to_string(s.end_layer) + ") d" +
            plan::format_device_list(s.devices) + " tp" + std::to_string(s.tp) + " z" +
            std::to_string(s.shard_optimizer) + " sh";
    for (int share : s.shares) text += std::to_string(share) + ",";
    for (int degree : s.replica_tps) text += " rtp" + std::to_string(degree);  // mixed tp
  }
  return fnv1a(text.data(), text.size());
}

uint32_t checkpoint_precision_code(plan::Precision precision) { return 1 + static_cast<uint32_t>(precision); }

std::string checkpoint_precision_name(uint32_t code) {
  for (plan::Precision p : {plan::Precision::fp32, plan::Precision::tf32, plan::Precision::fp16, plan::Precision::bf16}) {
    if (checkpoint_precision_code(p) == code) return plan::to_string(p);
  }
  return "unknown";
}

std::string checkpoint_path(const std::string& dir, int64_t step, int rank) {
  char name[32];
  std::snprintf(name, sizeof(name), "/rank-%05d.ckpt", rank);
  return step_folder(dir, step) + name;
}

void write_checkpoint(const std::string& path, const Checkpoint& checkpoint) {
  const CheckpointHeader& h = checkpoint.header;
  std::string bytes(kMagic, sizeof(kMagic));
  put<uint32_t>(bytes, kVersion);
  put<uint32_t>(bytes, static_cast<uint32_t>(h.rank));
  put<uint32_t>(bytes, static_cast<uint32_t>(h.world_size));
  put<uint32_t>(bytes, h.precision);
  put<uint64_t>(bytes, h.fingerprint);
  put<int64_t>(bytes, h.step);
  put<uint64_t>(bytes, h.seed);
  put<uint64_t>(bytes, checkpoint.state.size());
  bytes.append(reinterpret_cast<const char*>(checkpoint.state.data()),
               checkpoint.state.size() * sizeof(float));
  put<uint64_t>(bytes, fnv1a(bytes.data(), bytes.size()));
  const auto slash = path.find_last_of('/');
  if (slash != std::string::npos) make_folder(path.substr(0, slash));
  write_file_atomically(path, bytes);
}

Checkpoint read_checkpoint(const std::string& path, uint64_t fingerprint, int rank) {
  const std::string bytes = read_file_bytes(path);
  const char* hint = "it is not a whale checkpoint, or it is damaged; remove it or use another "
                     "--checkpoint-dir";
  if (bytes.size() < sizeof(kMagic) || std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0)
    throw Error(path, "header.magic", "a whale checkpoint starting with \"WHALECKP\"", hint);
  if (bytes.size() < kHeaderBytes + 8)
    throw Error(path, "header",
                "a checkpoint header of " + std::to_string(kHeaderBytes + 8) + " bytes, got " +
                    std::to_string(bytes.size()) + " bytes (the file is truncated)",
                hint);
  if (get<uint32_t>(bytes, 8) != kVersion)
    throw Error(path, "header.version", "checkpoint version " + std::to_string(kVersion), hint);
  const uint64_t count = get<uint64_t>(bytes, 48);
  // Compared as a float count first: count * sizeof(float) must not wrap around.
  if (count > (bytes.size() - kHeaderBytes - 8) / sizeof(float) ||
      bytes.size() != kHeaderBytes + count * sizeof(float) + 8)
    throw Error(path, "header.count",
                std::to_string(kHeaderBytes + count * sizeof(float) + 8) + " bytes for " +
                    std::to_string(count) + " floats, but the file has " +
                    std::to_string(bytes.size()),
                "the file is truncated or corrupt");
  const std::size_t body = bytes.size() - 8;
  if (get<uint64_t>(bytes, body) != fnv1a(bytes.data(), body))
    throw Error(path, "checksum", "a checksum that matches the contents", "the file is corrupt");
  Checkpoint checkpoint;
  CheckpointHeader& h = checkpoint.header;
  h.rank = static_cast<int>(get<uint32_t>(bytes, 12));
  h.world_size = static_cast<int>(get<uint32_t>(bytes, 16));
  h.precision = get<uint32_t>(bytes, 20);
  h.fingerprint = get<uint64_t>(bytes, 24);
  h.step = get<int64_t>(bytes, 32);
  h.seed = get<uint64_t>(bytes, 40);
  if (h.fingerprint != fingerprint)
    throw Error(path, "header.fingerprint",
                "a checkpoint of this plan and model, but it was written by another",
                "resume with the plan that wrote it, or use another --checkpoint-dir");
  if (h.rank != rank)
    throw Error(path, "header.rank",
                "rank " + std::to_string(rank) + ", got " + std::to_string(h.rank));
  checkpoint.state.resize(count);
  std::memcpy(checkpoint.state.data(), bytes.data() + kHeaderBytes, count * sizeof(float));
  return checkpoint;
}

void mark_latest(const std::string& dir, int64_t step) {
  const std::string folder = step_folder(dir, step);
  write_file_atomically(dir + "/latest", folder.substr(folder.find_last_of('/') + 1) + "\n");
}

int64_t latest_step(const std::string& dir) {
  const std::string path = dir + "/latest";
  std::string text;
  try {
    text = read_file_bytes(path);
  } catch (const Error&) {
    throw Error(path, "", "a checkpoint to resume from", "run without --resume first, with --checkpoint-dir " + dir);
  }
  long long step = -1;
  char tail = 0;
  if (std::sscanf(text.c_str(), "step-%lld%c", &step, &tail) != 2 || tail != '\n' || step < 0)
    throw Error(path, "", "a line \"step-NNNNNNNN\"", "the file is corrupt");
  return step;
}

}  // namespace whale::exec
