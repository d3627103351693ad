#!/bin/bash
# Slurm batch script of whale-run of plan.yaml: 64 ranks, one per device, on 8 host(s) in rank order.
# Written by whale-plan --export-launch slurm (docs/run.md, "Running across machines").
# Host names are the cluster file's node names where --hosts gave none: replace them
# with your machines' names, or export again with --hosts NODE=HOST,...
# Node types differ: one component of a heterogeneous job per run of alike nodes, in
# rank order (srun numbers the ranks of component 0 first).
#SBATCH --job-name=whale
# ranks 0-15, 8 x a100-sxm4-40gb per node: a100-0, a100-1
#SBATCH --nodes=2
#SBATCH --nodelist=a100-0,a100-1
#SBATCH --ntasks-per-node=8
#SBATCH --gpus-per-node=8
#SBATCH hetjob
# ranks 16-63, 8 x v100-sxm2-16gb per node: v100-0, v100-1, v100-2, v100-3, v100-4, v100-5
#SBATCH --nodes=6
#SBATCH --nodelist=v100-0,v100-1,v100-2,v100-3,v100-4,v100-5
#SBATCH --ntasks-per-node=8
#SBATCH --gpus-per-node=8
set -euo pipefail
PLAN="${PLAN:-plan.yaml}"  # the plan file (whale-plan --out)
DATA="${DATA:?set DATA to the training data file}"  # the training data file
# Block distribution keeps each node's ranks consecutive; every rank sees all GPUs of its
# node (--gpu-bind=none) and drives the one of its device's index on the node.
srun --het-group=0-1 --distribution=block --gpu-bind=none whale-run "$PLAN" --data "$DATA"
