# File: core_binding.sh
# Sourced by the scripts that time CPU ranks (fidelity.sh, hetero_demo.sh): CORE_BINDING, the
# mpirun flags that put rank r on core r and keep it there, so that rank r runs on the core its
# profile cpu-core<r> was measured on.
# shellcheck shell=bash
CORE_BINDING=(--map-by core --bind-to core)
