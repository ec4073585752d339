#!/bin/sh
# Installs the worker into /opt/potato: the one recipe the Dockerfile and apptainer.def both run.
# $1: the source tree (pyproject.toml, README.md, src/); $2: the constraints file.
set -eu
src=$1 constraints=$2
[ -n "${PIP_FIND_LINKS:-}" ] || unset PIP_FIND_LINKS  # an empty build argument: no find-links
python3 -m venv /opt/potato
pip() { /opt/potato/bin/pip --no-cache-dir --disable-pip-version-check "$@"; }
pip install --upgrade "pip>=24"
pip wheel --no-deps --wheel-dir /tmp/potato-wheels "$src"
# torch first and alone, pinned: otherwise a dependency could pull another build of it
pip install -c "$constraints" "$(grep -E '^torch==' "$constraints")"
# with its own few dependencies (click, flask, pyyaml): `potato training check` works inside the image
pip install -c "$constraints" /tmp/potato-wheels/*.whl
extra=""
if grep -q '^nvidia-cuda-nvrtc' "$constraints"; then extra=nvidia-cuda-nvrtc; fi
# shellcheck disable=SC2086
pip install -c "$constraints" transformers peft accelerate scikit-learn bitsandbytes gguf $extra
cp "$constraints" /opt/potato/constraints.txt
rm -rf /tmp/potato-wheels
find /opt/potato -name __pycache__ -prune -exec rm -rf {} +
