"""The GPUs a run is given: what nvidia-smi reports, the device a run trains on, data-parallel ranks."""
