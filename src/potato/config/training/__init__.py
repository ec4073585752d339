"""Training's config: model_training, its backends, and active learning."""
