// File: model.h
// Model: an ordered list of layers with their costs, generated from a family (gpt, bert,
// llama) and its hyperparameters, or listed layer by layer; plus the training setup.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "whale/plan/framework_precision.h"
#include "whale/plan/moe.h"
#include "whale/plan/precision.h"
#include "whale/plan/units.h"

namespace whale::plan {

enum class LayerKind { embedding, transformer, head, custom };
/// The embedding or the head: the layers around the blocks, which ride in a pipeline's first
/// and last stages.
inline bool outer_kind(LayerKind kind) { return kind == LayerKind::embedding || kind == LayerKind::head; }
/// The kind's name as model files write it: embedding, transformer, head or custom.
const char* to_string(LayerKind kind);
/// Reads a kind's name into `kind`; false (and `kind` unchanged) for an unknown name.
bool parse_layer_kind(const std::string& name, LayerKind* kind);

/// One GEMM of a layer's forward pass for ONE sample at tensor-parallel degree 1:
/// `count` independent products C[m,n] = A[m,k] * B[k,n]. Flops = 2*m*n*k*count.
/// A tp-split GEMM is divided across the tp shards (n or k is split, and `count` heads are).
struct GemmOp {
  std::string name;
  double m = 0, n = 0, k = 0;
  double count = 1;
  bool tp_split = true;
  /// A routed expert's GEMM of an MoE block: `count` experts of m rows each (the mean tokens
  /// per expert), run as one grouped GEMM whose products each read the efficiency curve at
  /// their own small shape; split over the stage's ep (experts) and expert_tp (n or k)
  /// instead of tp (moe_layer.h). tp_split is false on it.
  bool expert = false;
};

/// Whether a named op (a GemmOp's or MemoryOp's name, as the family builders name them)
/// belongs to the attention core (scores, softmax, attention dropout, context): what selective
/// recomputation recomputes and what it does not keep.
bool is_attention_core(const std::string& op_name);

/// Under sequence parallelism whale-run's stage keeps, beside a layer's backward buffers, three
/// tensors over all rows, each the size of the layer's input: the tensor region's gathered
/// input (of a column-parallel linear) and partial output (of a row-parallel one), and the
/// stage border's whole tensor.
constexpr int kSequenceParallelWholeBuffers = 3;

struct Layer;
/// Bytes per sample that a split backward (zb-h1) keeps from its input pass to its weight pass
/// in `layer`: the input and the output gradient of every weight GEMM (all but the attention
/// core's), in the precision's element size. Under Megatron's column and row splits a tp shard
/// holds the wider of the two split and the narrower whole; a GEMM that is not tp-split holds
/// both whole. The simulator's memory model and the planner's quick estimate both count it.
Bytes weight_pass_bytes(const Layer& layer, int tp, Precision precision);

/// One memory-bound op (layernorm, GELU, softmax, dropout, residual add, ...) of the forward
/// pass for ONE sample at tp 1: the bytes it reads plus writes.
struct MemoryOp {
  std::string name;
  Bytes bytes = 0;
  bool tp_split = false;
  bool expert = false;  // on the routed experts' tokens: split by expert_tp, not tp (moe_layer.h)
};

struct Layer {
  std::string name;
  LayerKind kind = LayerKind::custom;
  std::vector<GemmOp> gemms;          // forward, one sample, tp 1
  std::vector<MemoryOp> memory_ops;   // forward, one sample, tp 1
  double parameters = 0;              // all parameters of the layer
  double parameters_replicated = 0;   // the part every tp shard holds whole (norms, some biases)
  // Activations kept for the backward pass, per sample, without recomputation:
  Bytes activation_bytes_replicated = 0;  // not divided by tp (e.g. layernorm inputs)
  Bytes activation_bytes_split = 0;       // divided by tp, kept under selective recomputation
  Bytes activation_bytes_attention = 0;   // divided by tp, dropped by selective recomputation
                                          // (softmax input/output, attention dropout mask)
  // The attention core's shape, per sample at tp 1, from which the memory model prices what each
  // attention implementation keeps (attention_memory.h); 0 on layers without one (listed layers,
  // whose activation_bytes_attention is taken as it is):
  double attention_score_elements = 0;  // a s²: every head's score matrix
  double attention_rows = 0;            // a s: the rows of those matrices
  bool attention_dropout = false;       // dropout on the attention probabilities
  // The attention core's output (the context, s q elements per sample at tp 1, tp-split): what
  // selective recomputation rebuilds beside the core's kept bytes. 0 on layers without a core.
  Bytes attention_output_bytes = 0;
  // The hidden-dropout masks among activation_bytes_replicated, per sample (1 byte per
  // element), which a framework that draws its masks again does not keep
  // (FrameworkMemory::dropout_masks_kept).
  Bytes dropout_mask_bytes = 0;
  // The logits a language-model head's loss reads, s v per sample at tp 1 (loss_memory.h); 0 on
  // other layers and on listed ones.
  double logit_elements = 0;
  Bytes input_bytes = 0;              // per sample: the layer's input, all that full
                                      // recomputation keeps
  // The gradient buffers of one backward of the layer, per sample, when the framework holds all
  // of a block's at once (FrameworkMemory::stage_buffer_cache, whale-run's block scratch):
  // the gradients of the block's intermediates and of its input and output.
  Bytes backward_buffer_bytes_split = 0;       // divided by tp (tp-split widths: ffn, heads)
  Bytes backward_buffer_bytes_replicated = 0;  // width h, divided by tp under sequence parallelism
                                               // (then kSequenceParallelWholeBuffers beside them)
  Bytes output_bytes = 0;             // per sample: the tensor that crosses to the next layer
  Bytes tp_allreduce_bytes = 0;       // per sample: bytes all-reduced across tp per forward pass
                                      // (the same again in backward)
  // Mixture of experts (docs/moe.md), all 0 on a dense layer:
  double experts = 0;                 // routed experts of the block
  double expert_parameters = 0;       // the routed experts' part of `parameters` (not of
                                      // parameters_replicated): split over ep x expert_tp
  Bytes activation_bytes_expert = 0;  // per sample: what the routed experts keep for the
                                      // backward (tokens x top_k rows), divided by expert_tp
  Bytes all_to_all_bytes = 0;         // per sample at tp 1: the tokens one all-to-all moves,
                                      // s x hidden x top_k elements; a step of a micro-batch runs
                                      // four (dispatch and combine, forward and backward)
  double expert_load_imbalance = 1;   // the busiest expert's tokens over the mean: MoeSpec's
                                      // load_imbalance, capped at its capacity_factor (>= 1)

  /// Forward flops for one sample at tp 1 (sum over gemms of 2*m*n*k*count).
  Flops forward_flops() const;
  /// Activation bytes kept per sample at tp degree `tp` without recomputation.
  Bytes activation_bytes(int tp) const;
};

struct Training {
  int global_batch = 0;           // samples per optimizer step
  /// > 0: the global batch is this many tokens (a config.json's default), and set_sequence
  /// sets global_batch again from it; 0: global_batch as given.
  int global_batch_tokens = 0;
  Precision precision = Precision::bf16;
  std::string optimizer = "adamw";
  /// How the framework applies `precision` (YAML: allow_tf32, grad_reduce_precision,
  /// master_weights; optional). A plan made for this model starts from these settings.
  FrameworkPrecision framework_precision;
};

struct Model {
  std::string name;
  std::string source_file;   // "" when built in code
  std::string family;        // "gpt", "bert", "llama" or "listed"
  // Family hyperparameters (0 for a listed model):
  int num_layers = 0;        // transformer blocks
  int hidden = 0;
  int heads = 0;
  int ffn_hidden = 0;        // default 4*hidden (gpt, bert)
  int kv_heads = 0;          // llama grouped-query attention: key/value heads (0 = heads)
  /// Width of one attention head (0 = hidden / heads). Wider heads (Qwen3, Gemma) make the
  /// attention width heads x head_dim differ from hidden: q, k, v and the attention core run
  /// at that width, and the output projection maps it back to hidden.
  int head_dim = 0;
  bool tie_embeddings = false;  // the LM head reuses the token table (counted once, in the
                                // embedding layer); the head's GEMM still runs
  bool qkv_bias = false;     // llama only: biases on q, k and v (Qwen2)
  double rope_theta = 0;     // rotary base, carried for the record; on gpt it means rotary
                             // positions (GPT-NeoX) instead of a learned position table
  int sequence = 0;          // tokens per sample
  /// Tokens of a config.json's sliding-window attention, 0 for none. whale models full
  /// attention, which a window at least as long as the sequence is: set_sequence refuses a
  /// longer sequence.
  int sliding_window = 0;
  int vocabulary = 0;
  /// Dropout probabilities, on the attention probabilities and on the hidden states (after the
  /// embedding, the attention projection and the MLP). Unset: the family's default, 0.1 for
  /// gpt and bert (Megatron-LM's --attention-dropout and --hidden-dropout, GPT-2's and BERT's
  /// configs), 0 for llama (no dropout in Llama; transformers' LlamaConfig attention_dropout
  /// 0.0). A dropout of 0 keeps no mask (model_families.cpp).
  std::optional<double> attention_dropout;
  std::optional<double> hidden_dropout;
  /// The experts of a mixture-of-experts model (moe.h); unset for a dense model.
  std::optional<MoeSpec> moe;
  Training training;
  /// Layers in execution order. For a family model: [embedding, block 0..L-1, head].
  std::vector<Layer> layers;

  /// Forward flops of one sample through every layer.
  Flops forward_flops_per_sample() const;
  /// head_dim when set, else hidden / heads (0 for a listed model).
  int attention_head_dim() const;
  double parameter_count() const;
};

/// Builds the layers of a family model from its hyperparameters at `precision`.
/// Sets `model.layers`; throws whale::Error for an unknown family.
void generate_layers(Model& model, Precision precision);

/// Trains a family model on samples of `sequence` tokens (the tools' --sequence): sets
/// model.sequence (and the global batch, where it is a number of tokens) and generates its
/// layers again at `precision`. Throws whale::Error naming `option` for a listed model (its
/// layers are given, not generated), a sequence outside [1, kMaxModelDimension] or one longer
/// than the model's sliding window.
void set_sequence(Model& model, int sequence, Precision precision, const std::string& option);
/// Whether tensor parallelism of degree `tp` splits the model's attention heads, its key-value
/// heads (grouped-query attention's groups) and its MLP's hidden width evenly, as Megatron-LM's
/// column and row splits and whale-run's layers require, and gives every tensor rank rows of
/// the vocabulary-parallel token table and LM head (a listed model, without them, splits at any
/// degree).
bool tp_splits_layers(const Model& model, int tp);
/// Why tensor parallelism of degree `tp` does not split the model's layers ("tp 4 does not
/// divide the model's 2 kv_heads", "tp 2 exceeds the model's vocabulary of 1 tokens"); empty
/// where it does.
std::string tp_split_failure(const Model& model, int tp);
/// The samples of a global batch of `tokens` tokens at `sequence` tokens per sample (rounded,
/// at least 1).
int batch_of_tokens(int tokens, int sequence);

/// Loads and validates a model file: whale's model YAML, or a Hugging Face config.json
/// (detected by the .json name or a model_type key; see docs/model.md). Throws whale::Error on
/// bad input, naming the file and the field.
Model load_model(const std::string& path);

/// The dropout probabilities a model trains with: its attention_dropout and hidden_dropout, or
/// its family's default when unset (Model::attention_dropout).
double attention_dropout_of(const Model& model);
double hidden_dropout_of(const Model& model);
/// Writes the model (hyperparameters for a family model, the layer list for a listed one).
void save_model(const Model& model, const std::string& path);

}  // namespace whale::plan
