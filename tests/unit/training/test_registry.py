"""The trainer registry and parameter validation: clear errors that list the valid choices."""

from __future__ import annotations

import pytest

from potato.errors import TrainingError
from potato.training.job.failures import BadJob
from potato.training.trainers import TRAINERS, UnknownTrainer, available_trainers, get_trainer
from potato.training.trainers.base import Trainer, multiselect_prediction, radio_prediction


def test_unknown_trainer_lists_the_valid_ones() -> None:
    with pytest.raises(UnknownTrainer) as info:
        get_trainer("sklearn")
    assert str(info.value) == (
        "Unknown trainer 'sklearn'. Valid trainers are: decision-calibrate, hf-llm-classification, "
        "hf-llm-preference, hf-text-classification, hf-token-classification, llm-zero-shot, noop, "
        "sklearn-text-classification, sklearn-token-classification"
    )
    assert isinstance(info.value, TrainingError)


def test_every_registered_trainer_loads_without_its_heavy_packages() -> None:
    infos = {info.name: info for info in available_trainers()}
    assert set(infos) == set(TRAINERS)
    for name in TRAINERS:
        cls = get_trainer(name)
        assert issubclass(cls, Trainer) and cls.name == name and cls.description
    assert infos["hf-text-classification"].requires == ("torch", "transformers", "peft")
    assert infos["hf-text-classification"].uses_device
    assert infos["sklearn-text-classification"].requires == ("scikit-learn",)
    assert infos["decision-calibrate"].local_only and not infos["noop"].local_only
    assert infos["noop"].requires == ()
    # The tutorial's request names no base_model: it has a default, shown on the form (issue 19).
    assert "distilbert-base-uncased" in infos["hf-text-classification"].params["base_model"]
    assert infos["hf-text-classification"].shown == ("base_model",)


def test_params_are_validated() -> None:
    cls = get_trainer("sklearn-text-classification")
    assert cls.validate_params({"C": 2}) == {"C": 2.0, "max_features": 2 ** 20, "ngram_max": 2}
    with pytest.raises(BadJob) as info:
        cls.validate_params({"c": 1.0, "epochs": 3})
    assert str(info.value) == (
        "Trainer 'sklearn-text-classification' has no parameter 'c', 'epochs'. "
        "Valid parameters are: C, max_features, ngram_max"
    )
    with pytest.raises(BadJob, match="parameter ngram_max must be int, not '2'"):
        cls.validate_params({"ngram_max": "2"})
    with pytest.raises(BadJob, match="parameter ngram_max must be at least 1, not 0"):
        cls.validate_params({"ngram_max": 0})
    hf = get_trainer("hf-text-classification")
    assert hf.validate_params({})["base_model"] == "distilbert-base-uncased"
    with pytest.raises(BadJob, match="parameter lora must be bool, not 1"):
        hf.validate_params({"base_model": "x", "lora": 1})
    assert hf.required_modules(hf.validate_params({"base_model": "x"})) == ("torch", "transformers")
    assert hf.required_modules(hf.validate_params({"base_model": "x", "lora": True}))[-1] == "peft"
    with pytest.raises(BadJob, match="method must be one of 'platt', 'temperature', not 'isotonic'"):
        get_trainer("decision-calibrate").validate_params({"source_predictions": "/x", "method": "isotonic"})


def test_prediction_helpers() -> None:
    assert radio_prediction({"a": 0.2, "b": 0.8})[:2] == ("b", 0.8)
    assert radio_prediction({"a": 0.5, "b": 0.5})[:2] == ("a", 0.5)
    assert radio_prediction({"a": 0.2, "b": 0.8}).probabilities == {"a": 0.2, "b": 0.8}  # for margin and entropy
    assert multiselect_prediction({"p": 0.9, "q": 0.5, "r": 0.1})[:2] == (("p", "q"), pytest.approx(0.7))
    assert multiselect_prediction({"p": 0.2, "q": 0.4})[:2] == ((), pytest.approx(0.7))  # mean of 1 - p
    assert multiselect_prediction({"p": 0.2, "q": 0.4}).probabilities == {"p": 0.2, "q": 0.4}
    assert multiselect_prediction({}) == ((), 1.0, None)
