// File: framework_precision_yaml.cpp
// Reads and writes the framework's precision settings (docs/plan.md, docs/model.md), shared by
// the model's training section and the plan.
#include "spec_yaml.h"
#include "whale/plan/framework_precision.h"
#include "yaml_writer.h"

namespace whale::plan {

FrameworkPrecision parse_framework_precision(const YamlField& field, const FrameworkPrecision& defaults) {
  FrameworkPrecision out = defaults;
  out.allow_tf32 = field.boolean_or("allow_tf32", defaults.allow_tf32);
  if (field.has("grad_reduce_precision")) {
    const YamlField grad = field.get("grad_reduce_precision");
    if (!parse_grad_reduce_precision(grad.text(), &out.grad_reduce)) {
      grad.fail("unknown grad_reduce_precision '" + grad.text() + "'",
                "use training (reduce in the training precision) or fp32");
    }
  }
  if (field.has("master_weights")) {
    const YamlField master = field.get("master_weights");
    if (!parse_master_weights(master.text(), &out.master_weights)) {
      master.fail("unknown master_weights '" + master.text() + "'", "use fp32 or none");
    }
  }
  return out;
}

void emit_framework_precision(YAML::Emitter& out, const FrameworkPrecision& settings,
                              const FrameworkPrecision& implied) {
  const FrameworkPrecision builtin;
  if (settings.allow_tf32 != builtin.allow_tf32 || settings.allow_tf32 != implied.allow_tf32)
    out << YAML::Key << "allow_tf32" << YAML::Value << settings.allow_tf32;
  if (settings.grad_reduce != builtin.grad_reduce || settings.grad_reduce != implied.grad_reduce)
    emit_text_field(out, "grad_reduce_precision", to_string(settings.grad_reduce));
  if (settings.master_weights != builtin.master_weights || settings.master_weights != implied.master_weights)
    emit_text_field(out, "master_weights", to_string(settings.master_weights));
}

}  // namespace whale::plan
