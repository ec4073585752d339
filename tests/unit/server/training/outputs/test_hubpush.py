"""Issue 24, pushing to the Hugging Face Hub: the pure parts (repository names, the request, the model
card, why a model cannot be pushed, what a Hub error means) and the token and state files."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from potato.config.schema import HubSettings
from potato.server.training.outputs import hubpush
from potato.server.training.outputs.hubcard import (
    CardFacts,
    PushRefused,
    PushRequest,
    SchemaFacts,
    default_repo_id,
    model_card,
    read_request,
    repo_id_problem,
)
from potato.server.training.outputs.hubmessages import hub_error_message, redact, stayed_reason
from potato.server.training.runs.modelplace import Kept, ModelPlace

TOKEN = "hf_SecretTokenValue0123456789"


# -- names and requests ------------------------------------------------------------------------

def test_default_repo_id_is_the_project_and_trainer_slugified() -> None:
    assert default_repo_id("Review Sentiment", "sklearn-text-classification", None) == \
        "review-sentiment-sklearn-text-classification"
    assert default_repo_id("Review Sentiment", "noop", "my-lab") == "my-lab/review-sentiment-noop"
    assert default_repo_id("Ünïcode — Stüdy (2026)!", "noop", None) == "n-code-st-dy-2026-noop"
    long = default_repo_id("x" * 200, "noop", None)
    assert len(long) <= 96 and repo_id_problem(long) is None
    for name in ("Review Sentiment", "!!!", "a" * 300, "--x--"):
        assert repo_id_problem(default_repo_id(name, "hf-text-classification", "org")) is None


@pytest.mark.parametrize("repo_id", ["model", "my-lab/model", "a.b_c-d/e.f", "A1/B2", "x" * 96])
def test_repository_names_the_hub_takes(repo_id: str) -> None:
    assert repo_id_problem(repo_id) is None


@pytest.mark.parametrize("repo_id", ["", "a/b/c", "/model", "model/", "-model", "model-", ".model", "mo--del",
                                     "mo..del", "has space", "model.git", "x" * 97, "ü-model", "a\nb"])
def test_repository_names_the_hub_refuses(repo_id: str) -> None:
    problem = repo_id_problem(repo_id)
    assert problem is not None and "namespace/name" in problem


def test_a_request_takes_defaults_for_what_it_leaves_out() -> None:
    assert read_request(None, "org/default", "msg") == PushRequest("org/default", True, "msg")
    assert read_request({"repo_id": None, "private": None, "commit_message": ""}, "d", "m") == \
        PushRequest("d", True, "m")
    got = read_request({"repo_id": "org/name", "private": False, "commit_message": " Mine ", "x": 1}, "d", "m")
    assert got == PushRequest("org/name", False, "Mine")


@pytest.mark.parametrize("body, words", [
    ([], "Send a JSON object"),
    ({"repo_id": 3}, "repo_id must be text"),
    ({"repo_id": "a/b/c"}, "not a repository name"),
    ({"repo_id": ""}, "repo_id is empty: name the repository as name or namespace/name, or leave repo_id out (or "
                      "null) to push to d."),  # issue 33 item 6: the contract's minLength 1
    ({"repo_id": " "}, "repo_id is empty"),
    ({"repo_id": " org/name "}, "' org/name ' is not a repository name"),  # taken as written, as the contract says
    ({"commit_message": " " * 1001}, "keep it to 1000 or fewer"),
    ({"private": "yes"}, "private must be true or false"),
    ({"private": 1}, "private must be true or false"),
    ({"commit_message": ["x"]}, "commit_message must be text"),
    ({"commit_message": "x" * 1001}, "keep it to 1000 or fewer"),
])
def test_a_bad_request_is_a_400_that_says_what_is_wrong(body: Any, words: str) -> None:
    with pytest.raises(PushRefused) as refused:
        read_request(body, "d", "m")
    assert refused.value.status == 400 and words in str(refused.value)


# -- the model card ------------------------------------------------------------------------------

def facts(**over: Any) -> CardFacts:
    base: dict[str, Any] = dict(
        project="Review | Sentiment", repo_id="my-lab/review-model", run_id="20261129-215023-a1b2",
        trainer="sklearn-text-classification",
        schemas=(SchemaFacts("sentiment", "radio", ("positive", "negative")),),
        metrics={"holdout_accuracy": 0.8751, "holdout_macro_f1": 0.8612, "n_train": 32, "n_holdout": 8,
                 "sentiment/holdout_accuracy": 0.8751, "sentiment/holdout_macro_f1": 0.8612},
        finished="2026-11-29", files=("labels.json", "model.pkl"), n_items=40, n_annotators=3)
    base.update(over)
    return CardFacts(**base)


def split(card: str) -> tuple[dict[str, Any], str]:
    assert card.startswith("---\n")
    head, _, text = card[4:].partition("\n---\n")
    meta = yaml.safe_load(head)
    assert isinstance(meta, dict)
    return meta, text


def test_the_card_of_a_classifier_states_scores_labels_and_where_it_came_from() -> None:
    meta, text = split(model_card(facts()))
    assert meta["library_name"] == "sklearn" and meta["pipeline_tag"] == "text-classification"
    assert "sklearn-text-classification" in meta["tags"]
    result = meta["model-index"][0]
    assert result["name"] == "review-model"
    assert result["results"][0]["task"]["type"] == "text-classification"
    assert [(m["type"], m["value"]) for m in result["results"][0]["metrics"]] == [("accuracy", 0.8751), ("f1", 0.8612)]
    assert meta["potato"] == {"run_id": "20261129-215023-a1b2", "trainer": "sklearn-text-classification",
                              "labels": {"sentiment": ["positive", "negative"]},
                              "trained_on": {"labelled_items": 40, "annotators": 3}}
    assert "| sentiment | accuracy | 0.875 |" in text and "| sentiment | macro-F1 | 0.861 |" in text
    assert "40 labelled items (32 to train on, 8 held out for the score) from 3 annotators" in text
    assert "`20261129-215023-a1b2`, finished 2026-11-29 (UTC)" in text
    assert "**sentiment** (one label per item): `positive`, `negative`" in text
    assert "none (trained from scratch)" in text
    assert "- `model.pkl`" in text and "pickle" in text
    assert "span" not in text  # nothing about spans for a classifier


def test_the_card_of_a_span_model_gives_span_f1_precision_and_recall() -> None:
    meta, text = split(model_card(facts(
        trainer="hf-token-classification", base_model="bert-base-cased",
        schemas=(SchemaFacts("entities", "span", ("PER", "ORG")),),
        metrics={"entities/holdout_f1": 0.7, "entities/holdout_precision": 0.75, "entities/holdout_recall": 0.65625,
                 "n_train": 10, "n_holdout": 3})))
    assert meta["library_name"] == "transformers" and meta["pipeline_tag"] == "token-classification"
    assert meta["base_model"] == "bert-base-cased"
    metrics = {m["name"]: m["value"] for m in meta["model-index"][0]["results"][0]["metrics"]}
    assert metrics == {"Holdout span F1": 0.7, "Holdout span precision": 0.75, "Holdout span recall": 0.6562}
    assert "| entities | span F1 | 0.700 |" in text and "| entities | span recall | 0.656 |" in text
    assert "a span counts only when its start, end and label are all right" in text
    assert "[`bert-base-cased`](https://huggingface.co/bert-base-cased)" in text


def test_a_local_base_model_folder_is_named_not_published_as_a_path() -> None:
    meta, text = split(model_card(facts(trainer="hf-text-classification", base_model="/srv/models/my-bert",
                                        lora=True)))
    assert "base_model" not in meta and meta["library_name"] == "peft"
    assert "/srv/models" not in text and "(my-bert)" in text and "(LoRA adapter)" in text


def test_table_cells_escape_what_would_break_the_table() -> None:
    _, text = split(model_card(facts(schemas=(SchemaFacts("a|b", "radio", ("x", "y")),),
                                     metrics={"a|b/holdout_accuracy": 0.5})))
    assert "| a\\|b | accuracy | 0.500 |" in text


def test_a_card_without_scores_says_so_and_stays_valid_yaml() -> None:
    meta, text = split(model_card(facts(metrics={}, n_items=None, n_annotators=None,
                                        project='Quotes: "a" & {b} #c')))
    assert "model-index" not in meta
    assert "No holdout score" in text and "| Trained on | not recorded |" in text


def test_a_run_of_two_schemas_scores_each_and_takes_no_overall_number_for_one() -> None:
    meta, text = split(model_card(facts(
        schemas=(SchemaFacts("sentiment", "radio", ("positive", "negative")),
                 SchemaFacts("aspects", "multiselect", ("price", "quality"))),
        metrics={"holdout_accuracy": 0.5, "sentiment/holdout_accuracy": 0.9, "aspects/holdout_macro_f1": 0.4})))
    assert "| sentiment | accuracy | 0.900 |" in text and "| aspects | macro-F1 | 0.400 |" in text
    assert "| aspects | accuracy" not in text  # the overall 0.5 is not the aspects' score
    assert len(meta["model-index"][0]["results"]) == 2


# -- why a model cannot be pushed -------------------------------------------------------------------

LOCAL = Path("/srv/project/annotation_output/training/runs/20261129-215023-a1b2/artifacts")


def test_where_the_model_stayed_from_its_record() -> None:
    place = ModelPlace.from_json(ModelPlace(folder=str(LOCAL), files=2, bytes=10).to_json())
    assert place is not None and not place.stayed
    assert ModelPlace.from_json(None) is None
    place = ModelPlace.from_json(ModelPlace(host="gpu", host_folder="/home/a/.cache/potato-training/jobs/x/artifacts",
                                            kept=Kept.NOT_FETCHED).to_json())
    assert place is not None and (place.host, place.host_folder, place.partial) == \
        ("gpu", "/home/a/.cache/potato-training/jobs/x/artifacts", False)
    place = ModelPlace.from_json(ModelPlace(folder=str(LOCAL), host="gpu", kept=Kept.FILE_CAP, limit_mb=100,
                                            host_folder="~/.cache/potato-training/jobs/x/artifacts").to_json())
    assert place is not None and (place.host, place.host_folder, place.partial) == \
        ("gpu", "~/.cache/potato-training/jobs/x/artifacts", True)


def test_a_folder_here_is_counted_without_its_links(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "model.pkl").write_bytes(b"12345")
    (tmp_path / "sub" / "config.json").write_text("{}")
    (tmp_path / "link").symlink_to(tmp_path / "model.pkl")
    place = ModelPlace.here(tmp_path)
    assert (place.folder, place.files, place.bytes, place.stayed) == (str(tmp_path), 2, 7, False)


def stayed(**fields: Any) -> ModelPlace:
    return ModelPlace(host="gpu", host_folder="/data/jobs/x/artifacts", **fields)


def test_fetch_artifacts_off_is_named_with_the_fix() -> None:
    text = stayed_reason(stayed(kept=Kept.NOT_FETCHED), "gpu-server")
    assert text.startswith("The model stayed on gpu at /data/jobs/x/artifacts: fetch_artifacts is off for backend "
                           "'gpu-server'. This server has no copy to push.")
    assert "Set fetch_artifacts: true" in text and "hf upload <repo> /data/jobs/x/artifacts" in text


def test_a_model_over_max_artifacts_total_mb_is_named_from_its_record() -> None:
    text = stayed_reason(stayed(kept=Kept.TOTAL_CAP, limit_mb=8192), "gpu-server")
    assert "exceeded max_artifacts_total_mb (8192 MB) of backend 'gpu-server'" in text
    assert "Raise max_artifacts_total_mb" in text


def test_files_over_max_artifact_mb_leave_only_part_of_the_model() -> None:
    place = stayed(folder=str(LOCAL), kept=Kept.FILE_CAP, limit_mb=100, kept_files=("sentiment/model.safetensors",))
    text = stayed_reason(place, "gpu-server")
    assert text.startswith("Part of the model stayed on gpu at /data/jobs/x/artifacts (sentiment/model.safetensors)")
    assert "max_artifact_mb (100 MB)" in text and "would not load" in text


def test_an_agent_backend_and_a_vanished_backend() -> None:
    lab = ModelPlace(host="lab-pc", host_folder="/w/jobs/x/artifacts", kept=Kept.ON_AGENT)
    text = stayed_reason(lab, "lab")
    assert "runs on the agent backend 'lab' keep their model files on the training machine" in text
    text = stayed_reason(ModelPlace(host="lab-pc", host_folder="/w/jobs/x/artifacts"), "gone")
    assert "it was not copied back to this server" in text


def test_model_files_skip_links_and_the_folder_s_own_readme(tmp_path: Path) -> None:
    folder = tmp_path / "artifacts"
    (folder / "sentiment").mkdir(parents=True)
    (folder / "model.pkl").write_bytes(b"x")
    (folder / "sentiment" / "config.json").write_text("{}")
    (folder / "README.md").write_text("peft's card")
    (folder / "sentiment" / "README.md").write_text("kept: not the top-level card")
    secret = tmp_path / "secret_key"
    secret.write_text("server secret")
    (folder / "key").symlink_to(secret)
    (folder / "linked").symlink_to(tmp_path, target_is_directory=True)
    assert [rel for rel, _ in hubpush.model_files(folder)] == ["model.pkl", "sentiment/README.md",
                                                                "sentiment/config.json"]


# -- what a Hub error means ------------------------------------------------------------------------

def hub_error(status: int, path: str, headers: dict[str, str] | None = None, body: Any = None) -> Exception:
    """The exception huggingface_hub raises for an answer of the Hub."""
    import httpx2
    from huggingface_hub.utils import hf_raise_for_status

    request = httpx2.Request("POST", f"https://huggingface.co{path}")
    response = httpx2.Response(status, request=request, headers=headers or {}, json=body or {"error": "nope"})
    try:
        hf_raise_for_status(response)
    except Exception as exc:
        return exc
    raise AssertionError("no error raised")


def message(exc: BaseException, phase: str = "uploading the files") -> str:
    return hub_error_message(exc, repo_id="my-lab/review-model", token_from="HF_TOKEN in the server's environment",
                             endpoint="https://huggingface.co", phase=phase)


def test_a_refused_token_says_where_the_token_comes_from() -> None:
    for path in ("/api/repos/create", "/api/models/my-lab/review-model/commit/main"):
        text = message(hub_error(401, path, {"X-Error-Message": "Invalid credentials in Authorization header"}))
        assert text.startswith("The Hub refused the token (HTTP 401")
        assert "HF_TOKEN in the server's environment" in text and "settings/tokens" in text


def test_hub_answers_in_plain_words() -> None:
    text = message(hub_error(403, "/api/models/my-lab/review-model/preupload/main"))
    assert "refused to let this token write to my-lab/review-model (HTTP 403 while preparing the upload" in text
    assert "write access to my-lab" in text
    assert "HTTP 404 while committing the files" in message(
        hub_error(404, "/api/models/my-lab/review-model/commit/main", {"X-Error-Code": "RepoNotFound"}))
    text = message(hub_error(400, "/api/repos/create", body={"error": "Invalid repo name"}), "creating the repository")
    assert text.startswith("The Hub refused the repository name my-lab/review-model (HTTP 400")
    text = message(hub_error(500, "/api/models/my-lab/review-model/commit/main"))
    assert text.startswith("The Hub failed on its side (HTTP 500 while committing the files")
    assert "confirmed no commit" in text
    assert "HTTP 429" in message(hub_error(429, "/api/models/my-lab/review-model/commit/main"))


def test_network_trouble_and_other_failures() -> None:
    import httpx2

    text = message(httpx2.ConnectError("[Errno 111] Connection refused"), "creating the repository")
    assert text.startswith("Could not reach the Hub at https://huggingface.co while creating the repository "
                           "([Errno 111] Connection refused)")
    assert "HTTPS_PROXY" in text
    assert "Could not reach the Hub" in message(TimeoutError("timed out"))
    cut = httpx2.ReadTimeout("timed out", request=httpx2.Request(
        "POST", "https://huggingface.co/api/models/my-lab/review-model/commit/main"))
    text = message(cut)
    assert "while committing the files (timed out)" in text and "did not confirm the commit" in text
    from huggingface_hub.errors import OfflineModeIsEnabled

    assert "HF_HUB_OFFLINE" in message(OfflineModeIsEnabled("offline"))
    text = message(ValueError("Invalid metadata in README.md.\n- bad key"))
    assert text.startswith("The Hub refused the model card's metadata")
    assert message(RuntimeError("boom")) == "The push failed while uploading the files: RuntimeError: boom"


def test_an_answer_that_is_not_the_hub_s_says_so_instead_of_a_key_error() -> None:
    """Issue 33 item 6: huggingface_hub follows a redirect off the Hub's API (a moved address, a proxy's
    sign-in page) and then fails on the page it got, as ``KeyError: 'url'`` (or invalid JSON)."""
    text = message(KeyError("url"), "creating the repository")
    assert text.startswith("The answer to creating the repository did not come from the Hub's API: "
                           "https://huggingface.co answered without the 'url' the Hub sends. A redirect to another "
                           "address (which huggingface_hub follows) or a proxy answering in the Hub's place does this.")
    assert "HF_ENDPOINT" in text and text.endswith("nothing was pushed.") and "KeyError" not in text
    text = message(json.JSONDecodeError("Expecting value", "<html>", 0), "committing the files")
    assert "answered not in JSON" in text and "look at the repository before you push again" in text


def test_redact_blots_out_the_token() -> None:
    assert redact(f"Bearer {TOKEN} was sent to /x?{TOKEN}", TOKEN) == "Bearer [token] was sent to /x?[token]"
    assert redact("nothing here", TOKEN) == "nothing here"
    assert redact("keep", "") == "keep"


# -- the token ------------------------------------------------------------------------------------

def test_the_token_comes_from_the_file_when_one_is_named(tmp_path: Path) -> None:
    path = tmp_path / "hf_token"
    path.write_text(f"  {TOKEN}\n")
    token = hubpush.read_hub_token(HubSettings(token_file=path), {"HF_TOKEN": "hf_other"})
    assert token.value == TOKEN and token.source == f"the file {path} (model_training.hub.token_file)"
    assert TOKEN not in repr(token)
    token = hubpush.read_hub_token(HubSettings(), {"HF_TOKEN": f"{TOKEN}\n"})
    assert token.value == TOKEN and token.source == "HF_TOKEN in the server's environment"


@pytest.mark.parametrize("content, env, words", [
    (None, {}, "No Hugging Face token: set HF_TOKEN"),
    ("", {}, "is empty"),
    ("hf_a hf_b", {}, "not one word"),
    ("missing", {}, "cannot be read"),
])
def test_a_missing_or_broken_token_is_a_409(tmp_path: Path, content: str | None, env: dict[str, str],
                                            words: str) -> None:
    settings = HubSettings()
    if content is not None:
        settings = HubSettings(token_file=tmp_path / "hf_token")
        if content != "missing":
            (tmp_path / "hf_token").write_text(content)
    with pytest.raises(PushRefused) as refused:
        hubpush.read_hub_token(settings, env)
    assert refused.value.status == 409 and words in str(refused.value)


# -- the push's state --------------------------------------------------------------------------------

def test_a_push_whose_process_ended_reads_as_failed(tmp_path: Path) -> None:
    assert hubpush.read_state(tmp_path) is None
    fd = hubpush.take_lock(tmp_path)
    assert fd is not None
    hubpush.write_state(tmp_path, {"state": "pushing", "progress": "uploading"})
    assert hubpush.read_state(tmp_path)["state"] == "pushing"  # type: ignore[index]
    assert hubpush.take_lock(tmp_path) is None  # one push of a run at a time
    os.close(fd)  # the pushing process ends without a word
    state = hubpush.read_state(tmp_path)
    assert state is not None and state["state"] == "failed" and "ended during it" in state["error"]
    assert oct((tmp_path / hubpush.STATE_FILE).stat().st_mode & 0o777) == "0o600"
