#!/usr/bin/env python3
# File: check_schemas.py
# Validates every shipped YAML (configs/**, profiles/*, the regression hints) against its JSON
# Schema in docs/schema/, and checks that each schema's fields are exactly the keys its loader
# accepts (read from the loader's expect_keys lists in libplan/src). Exit 1 on any mismatch.
# Usage: check_schemas.py SOURCE_DIR
import glob
import json
import os
import re
import sys

import jsonschema
import yaml

SOURCE = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
SCHEMA_DIR = os.path.join(SOURCE, "docs", "schema")
# A kind's loader: its source file, or "a.cpp+b.cpp" when its keys are read in several.
LOADERS = {"cluster": "cluster_yaml.cpp", "model": "model_yaml.cpp+moe_yaml.cpp", "profile": "device_profile_yaml.cpp+flash_attention_rates.cpp",
           "plan": "plan_yaml.cpp", "hints": "hints.cpp"}
HINT_KEYS = {"layers", "stage_boundaries", "schedules", "max_pipeline_depth", "exclude_devices"}
failures = []


def load_schema(kind):
    with open(os.path.join(SCHEMA_DIR, kind + ".schema.json")) as f:
        return json.load(f)


SCHEMAS = {kind: load_schema(kind) for kind in LOADERS}


def validator(kind):
    """A Draft 7 validator that resolves the relative $refs between the schema files."""
    schema = SCHEMAS[kind]
    try:
        from referencing import Registry, Resource
        registry = Registry().with_resources(
            (name + ".schema.json", Resource.from_contents(s)) for name, s in SCHEMAS.items())
        return jsonschema.Draft7Validator(schema, registry=registry)
    except (ImportError, TypeError):  # jsonschema < 4.18 (Debian 12): the RefResolver with a store
        store = {name + ".schema.json": s for name, s in SCHEMAS.items()}
        resolver = jsonschema.RefResolver(base_uri="", referrer=schema, store=store)
        return jsonschema.Draft7Validator(schema, resolver=resolver)


def kind_of(document):
    if not isinstance(document, dict):
        return None
    for key, kind in (("stages", "plan"), ("nodes", "cluster"), ("family", "model"), ("peak_tflops", "profile")):
        if key in document:
            return kind
    return "hints" if set(document) <= HINT_KEYS else None


def check_files():
    patterns = ["configs/**/*.yaml", "bench/clusters/*.yaml", "profiles/*.yaml", "tests/regression/hints/*.yaml"]
    files = sorted({f for p in patterns for f in glob.glob(os.path.join(SOURCE, p), recursive=True)})
    validators = {kind: validator(kind) for kind in LOADERS}
    counts = {kind: 0 for kind in LOADERS}
    for path in files:
        rel = os.path.relpath(path, SOURCE)
        with open(path) as f:
            document = yaml.safe_load(f)
        kind = kind_of(document)
        if kind is None:
            failures.append(f"{rel}: not a cluster, model, profile, plan or hints file")
            continue
        counts[kind] += 1
        for error in sorted(validators[kind].iter_errors(document), key=lambda e: list(e.path)):
            where = ".".join(str(p) for p in error.path)
            failures.append(f"{rel}: {where}: {error.message} ({kind}.schema.json)")
    print("validated:", ", ".join(f"{n} {k}" for k, n in counts.items()))
    for kind, n in counts.items():
        if n == 0:
            failures.append(f"no shipped {kind} file was validated")


def schema_keys(node):
    """Every property name declared anywhere in a schema."""
    keys = set()
    if isinstance(node, dict):
        keys |= set(node.get("properties", {}))
        for value in node.values():
            keys |= schema_keys(value)
    elif isinstance(node, list):
        for value in node:
            keys |= schema_keys(value)
    return keys


def loader_keys(source_file):
    """The keys a loader accepts: its expect_keys and `allowed` lists, its Layer number table and
    the size and value keys of its efficiency curves and point lists."""
    text = ""
    for name in source_file.split("+"):
        with open(os.path.join(SOURCE, "libplan", "src", name)) as f:
            text += f.read()
    lists = re.findall(r"expect_keys\(\{(.*?)\}\)", text, re.S)
    lists += re.findall(r"allowed = \{(.*?)\};", text, re.S)
    keys = set()
    for item in lists:
        keys |= set(re.findall(r'"(\w+)"', item))
    keys |= set(re.findall(r'\{"(\w+)", &Layer::', text))
    keys |= set(re.findall(r'parse_curve\(.*?, "(\w+)", k\w+\)', text))  # a curve's size key
    keys |= set(re.findall(r'parse_points\([^;]*?, "(\w+)", k\w+,', text))  # a point list's size key
    keys |= set(re.findall(r'parse_points\([^;]*?"(\w+)", (?:true|false)\)', text))  # and its value key
    return keys


def check_keys():
    for kind, source_file in LOADERS.items():
        accepted = loader_keys(source_file)
        declared = schema_keys(SCHEMAS[kind])
        if not accepted:
            failures.append(f"{source_file}: no key lists found")
        for key in sorted(accepted - declared):
            failures.append(f"{kind}.schema.json: lacks '{key}', which {source_file} accepts")
        for key in sorted(declared - accepted):
            failures.append(f"{kind}.schema.json: declares '{key}', which {source_file} does not accept")


check_files()
check_keys()
for failure in failures:
    print("schema check:", failure, file=sys.stderr)
sys.exit(1 if failures else 0)
