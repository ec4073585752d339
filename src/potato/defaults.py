"""Every default in one place, one constant each (stdlib only: remote code imports this too)."""

PORT = 8000
"""Port ``potato start`` listens on."""

HOST = "127.0.0.1"
"""Address ``potato start`` binds; ``--host 0.0.0.0`` exposes it."""

LOCAL_BACKEND = "local"
"""Name of the backend that always exists: a subprocess on the server."""

TRAINER = "sklearn-text-classification"
"""Trainer a run uses when neither the request nor the config names one."""

TEXT_MAX_LENGTH = 5000
"""Characters a text scheme's answer may have unless the scheme sets max_length."""

GRACE_SECONDS = 20
"""Seconds between SIGTERM and SIGKILL when a run is cancelled."""

HEARTBEAT_TIMEOUT_S = 120
"""A remote run whose agent says nothing this long fails."""

MAX_PREDICTIONS_MB = 512
"""Largest predictions upload the server accepts; above it, 413."""

MAX_RUN_LOG_MB = 100
"""What one run's events.jsonl, run.log and agent.log may hold together on the server."""

DISK_RESERVE_MB = 256
"""Free disk space (under output_annotation_dir) that training writes may not use: annotators' labels may."""

MAX_ARTIFACT_MB = 2048
"""Model files larger than this stay on the remote host."""

MAX_ARTIFACTS_TOTAL_MB = 8192
"""A run's model files that together pass this stay on the remote host, all of them."""

MIN_FREE_GPU_MB = 2000
"""``gpus: auto`` needs a GPU with this much free memory."""

REMOTE_PYTHON = "python3"
"""Interpreter on an ssh host or login node when ``python`` is not set."""

REMOTE_DIR = "~/.cache/potato-training"
"""Where code, venvs and jobs live on an ssh host."""

KEEP_CONNECTION_S = 60
"""How long an ssh backend's connection stays open after a run or check, so the next one starts
without a new login; then it closes (0: close it when the run ends)."""

SSH_STEP_TIMEOUT_S = 120
"""Deadline of one short remote step over ssh (the probe, a check's command, writing a file, clean-up)."""

SSH_CODE_PUSH_TIMEOUT_S = 300
"""Deadline of copying Potato's code (well under a MB) to an ssh host or login node."""

SSH_VENV_TIMEOUT_S = 3600
"""Deadline of building a backend's packages venv (pip may download torch)."""

NVIDIA_SMI_TIMEOUT_S = 20
"""How long the probe waits for nvidia-smi on a host before it kills it and lists no GPUs."""

SLURM_POLL_INTERVAL_S = 10.0
"""Cadence of ``squeue`` calls for a SLURM job."""

SLURM_LONG_TIME_S = 6 * 3600
"""A slurm ``time`` above this warns."""

HOLDOUT_FRACTION = 0.2
"""Share of labelled items kept out of training to score the run."""

STEP_CONTEXT_CHARS = 1200
"""Characters of the turns before a step that a step classifier reads with it (the nearest first)."""

AUTO_RETRAIN_EVERY_N_LABELS = 100
ACTIVE_LEARNING_EVERY_N_LABELS = 5
"""Upstream's ``update_frequency`` default: labels between active learning's runs."""
ACTIVE_LEARNING_MIN_ITEMS = 10
"""Upstream's ``min_instances_for_training`` default: labelled items before the first run."""
ACTIVE_LEARNING_RANDOM_SHARE = 0.2
"""Upstream's ``random_sample_percent`` default: a share (0 to 1) of the reordered items drawn at random."""
"""New labels between two automatic runs when not configured."""

ACKNOWLEDGE_MIN_CHARS = 12
"""Shortest ``validation.acknowledge`` entry that may match a warning."""
SESSION_LIFETIME_DAYS = 30
"""How long an annotator stays signed in (upstream Potato's ``session_lifetime_days``)."""
AUTO_EXPORT_INTERVAL_S = 60
"""How often the upstream-layout export files are rewritten when labels changed (upstream's default)."""
CODEBOOK_MAX_CODES = 200
"""Codes annotators may add to an extensible codebook in all: each is a choice on every page and a class to train."""
CODEBOOK_MAX_CODES_PER_ANNOTATOR = 25
"""...and codes one annotator may add."""
AGENT_MIN_VERSION = "2.14.0"
"""Oldest agent version this server's protocol serves; an older one is told the command that updates it."""
