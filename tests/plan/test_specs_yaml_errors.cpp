// File: test_specs_yaml_errors.cpp
// Bad input common to every spec file: a missing file, malformed YAML, unknown keys, missing
// fields, wrong types and sizes that are zero or negative. Each names the file and the path.
#include <doctest/doctest.h>

#include "test_specs_util.h"
#include "whale/plan/cluster.h"
#include "whale/plan/device_profile.h"
#include "whale/plan/model.h"

using namespace whale::plan;
using whale::plan::testing::scratch_file;

namespace {

const char* kToyModel =
    "name: toy\nfamily: gpt\nlayers: 2\nhidden: 8\nheads: 2\nsequence: 4\nvocabulary: 16\n"
    "training: {global_batch: 4, precision: fp32}\n";

std::string with(const std::string& base, const std::string& from, const std::string& to) {
  std::string text = base;
  const std::size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("a missing file is named") {
  CHECK_SPEC_ERROR([] { load_model("no/such/model.yaml"); }, "no/such/model.yaml", "", "No such file or directory");
  CHECK_SPEC_ERROR([] { load_cluster("no/such/cluster.yaml"); }, "no/such/cluster.yaml", "", "No such file or directory");
  CHECK_SPEC_ERROR([] { load_device_profile("no/such/gpu.yaml"); }, "no/such/gpu.yaml", "", "No such file or directory");
}

TEST_CASE("malformed YAML gives the line") {
  const std::string path = scratch_file("malformed.yaml", "name: toy\nfamily: [gpt\nlayers: 2\n");
  const whale::Error e = whale::plan::testing::expect_error([&] { load_model(path); });
  CHECK(e.file() == path);
  CHECK(e.yaml_path() == "");
  CHECK(std::string(e.what()).find("malformed YAML at line") != std::string::npos);
  CHECK(e.hint().find("indentation") != std::string::npos);
}

TEST_CASE("a file holds one YAML document: a marker before the content is fine, a second document is refused") {
  CHECK(load_model(scratch_file("marked.yaml", std::string("# a model\n---\n") + kToyModel)).name == "toy");
  const std::string two = scratch_file("two-docs.yaml", std::string(kToyModel) + "--- # next\nname: other\n");
  CHECK_SPEC_ERROR([&] { load_model(two); }, two, "", "one YAML document, got a second at line 9");
  // A '---' inside a line is no marker.
  CHECK(load_model(scratch_file("dashes.yaml", with(kToyModel, "name: toy", "name: toy---x"))).name == "toy---x");
}

TEST_CASE("an unknown key is rejected and the allowed keys are listed") {
  const std::string path = scratch_file("unknown-key.yaml", std::string(kToyModel) + "colour: blue\n");
  CHECK_SPEC_ERROR([&] { load_model(path); }, path, "colour", "unknown key 'colour'");
  const whale::Error e = whale::plan::testing::expect_error([&] { load_model(path); });
  CHECK(e.hint().find("vocabulary") != std::string::npos);
  CHECK(std::string(e.what()).find("(line 9)") != std::string::npos);
  // Nested: the path reaches into the mapping.
  const std::string nested = scratch_file("unknown-nested.yaml", with(kToyModel, "precision: fp32", "precision: fp32, lr: 3"));
  CHECK_SPEC_ERROR([&] { load_model(nested); }, nested, "training.lr", "unknown key 'lr'");
  const std::string twice = scratch_file("twice.yaml", std::string(kToyModel) + "hidden: 16\n");
  CHECK_SPEC_ERROR([&] { load_model(twice); }, twice, "hidden", "key 'hidden' is given twice");
}

TEST_CASE("a missing field is named") {
  const std::string path = scratch_file("missing.yaml", with(kToyModel, "hidden: 8\n", ""));
  CHECK_SPEC_ERROR([&] { load_model(path); }, path, "hidden", "missing field 'hidden'");
  const std::string nested = scratch_file("missing-nested.yaml", with(kToyModel, "global_batch: 4, ", ""));
  CHECK_SPEC_ERROR([&] { load_model(nested); }, nested, "training.global_batch", "missing field 'global_batch'");
}

TEST_CASE("sizes that are zero or negative are rejected") {
  const std::string zero = scratch_file("zero.yaml", with(kToyModel, "layers: 2", "layers: 0"));
  CHECK_SPEC_ERROR([&] { load_model(zero); }, zero, "layers", "expected a positive integer, got '0'");
  const std::string negative = scratch_file("negative.yaml", with(kToyModel, "sequence: 4", "sequence: -4"));
  CHECK_SPEC_ERROR([&] { load_model(negative); }, negative, "sequence", "expected a positive integer, got '-4'");
  const std::string cluster = scratch_file("negative-count.yaml",
      "name: c\nnetwork: {kind: ib, bandwidth_gbps: 100, latency_us: 1}\n"
      "nodes:\n  - name: n\n    devices: [{model: cpu, count: -2}]\n"
      "    intra_link: {kind: shm, bandwidth_gbps: 0, latency_us: 1}\n");
  CHECK_SPEC_ERROR([&] { load_cluster(cluster); }, cluster, "nodes[0].intra_link.bandwidth_gbps",
                   "expected a number in [0.001, 1000000], got '0'");
}

TEST_CASE("a value of the wrong type is rejected") {
  const std::string text = scratch_file("type.yaml", with(kToyModel, "heads: 2", "heads: two"));
  CHECK_SPEC_ERROR([&] { load_model(text); }, text, "heads", "expected an integer, got 'two'");
  const std::string fraction = scratch_file("fraction.yaml", with(kToyModel, "heads: 2", "heads: 2.5"));
  CHECK_SPEC_ERROR([&] { load_model(fraction); }, fraction, "heads", "expected an integer");
  const std::string list = scratch_file("list.yaml", with(kToyModel, "name: toy", "name: [toy]"));
  CHECK_SPEC_ERROR([&] { load_model(list); }, list, "name", "expected a string, got a list");
}
