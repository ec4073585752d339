#!/bin/bash
# Potato training run 20261201-101500-ab12: written by the agent and submitted with sbatch.
# The agent on the login node follows events.jsonl here; exit_code says how the worker ended.
umask 077  # the job's files (labels, annotators' names, predictions) are this user's only
cd '/shared/it'"'"'s here/jobs/20261201-101500-ab12' || exit 1
# where and when the job started, for the agent (squeue may never see a short job running)
printf '%s %s\n' "${SLURMD_NODENAME:-$(hostname -s)}" "$(date +%s)" > slurm_started.tmp && mv -f slurm_started.tmp slurm_started
echo "job.sh: SLURM job $SLURM_JOB_ID on $(hostname), CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-none}"
# prelude (from the backend's settings): a line that fails ends the job, named in slurm.out
potato_prelude_failed() {  # $1: the line's exit status, $2: its number, $3: the line
  echo "job.sh: prelude line $2 failed (exit $1): $3"
  cd '/shared/it'"'"'s here/jobs/20261201-101500-ab12' && printf '%s\n' "$1" > exit_code.tmp && mv -f exit_code.tmp exit_code
  exit "$1"
}
eval 'module load cuda/12.4' || potato_prelude_failed "$?" 1 'module load cuda/12.4'
eval 'source /shared/envs/torch/bin/activate' || potato_prelude_failed "$?" 2 'source /shared/envs/torch/bin/activate'
umask 077  # again: a prelude that sources a profile may have widened it
cd '/shared/it'"'"'s here/jobs/20261201-101500-ab12' || exit 1
export PYTHONPATH='/shared/it'"'"'s here/code/cf2aaf2eb49ec971'"${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1
export OMP_NUM_THREADS=4 MKL_NUM_THREADS=4 OPENBLAS_NUM_THREADS=4
trap 'echo "job.sh: SIGTERM from SLURM; waiting for the worker to stop"' TERM
/shared/envs/torch/bin/python -m potato.training.worker '/shared/it'"'"'s here/jobs/20261201-101500-ab12' >> worker.out 2>&1 &
worker=$!
while :; do wait "$worker"; code=$?; kill -0 "$worker" 2>/dev/null || break; done
[ -s exit_code ] || { printf '%s\n' "$code" > exit_code.tmp && mv exit_code.tmp exit_code; }
exit "$code"
