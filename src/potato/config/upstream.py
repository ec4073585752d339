"""Upstream Potato's configuration keys that this server does not honour, as data.

Projects move here from the released Potato with configs that hold many more keys than this
server reads. A key that changes who may sign in, what is stored or what annotators are asked
is an error (running without it would quietly run a different study); a cosmetic one is a
warning. Either way the message names the feature in one line, so an admin can decide to drop
it or stay on upstream Potato. Keys this server honours are not listed here: the validator
reads them.
"""

from __future__ import annotations

from typing import Mapping, NamedTuple


class Feature(NamedTuple):
    what: str
    """One line: what the key does in upstream Potato."""
    error: bool
    """True where running without it changes access, storage or what annotators see."""


def _e(what: str) -> Feature:
    return Feature(what, True)


def _w(what: str) -> Feature:
    return Feature(what, False)


TOP_LEVEL: Mapping[str, Feature] = {
    # who may sign in
    "authentication": _e("sign-in through an identity provider (OAuth, SSO) or an accounts database"),
    "rbac": _e("roles and permissions for annotators, reviewers and admins"),
    "user_roles": _e("roles given to named annotators"),
    "require_no_password": _e("sign-in without a password next to password accounts"),
    "mturk": _e("Amazon Mechanical Turk HITs and their sign-in"),
    "prolific": _e("Prolific study integration (sign-in, completion, payouts)"),
    "sessions": _e("named annotation sessions that group annotators"),
    "rooms": _e("live rooms where annotators work together"),
    "server_name": _w("a display name for the browser title (these pages are titled with annotation_task_name)"),
    "persist_sessions": _w("keeping upstream's in-memory sessions across restarts (sessions here always persist)"),
    # what annotators are shown or asked
    "surveyflow": _e("survey pages before and after the annotation"),
    "prestudy": _e("a qualification test before annotating"),
    "attention_checks": _e("attention-check items mixed into the queue"),
    "gold_standards": _e("gold items with known answers mixed into the queue"),
    "gold_standards_file": _e("the file of gold items with known answers"),
    "pre_annotation": _e("showing model pre-annotations from a file (model suggestions here come from model_training)"),
    "quality_control": _e("quality-control rules that change an annotator's queue"),
    "qda_mode": _e("qualitative coding mode (codes created while annotating)"),
    "codebook": _e("an interactive codebook that annotators edit"),
    "codebook_invivo_key": _e("in-vivo codes taken from the text"),
    "annotation_ui": _e("an alternative annotation interface"),
    "cases": _e("case-based qualitative coding"),
    "search": _e("item search for annotators"),
    "category_assignment": _e("assigning items to annotators by category"),
    "diversity_ordering": _e("ordering items by clusters of their embeddings; assignment_strategy: random gives each "
                             "annotator a shuffled order, and active_learning puts the items a model is least sure "
                             "of first"),
    "diversity_config": _e("settings of diversity ordering"),
    "embedding_visualization": _e("an embedding map of the items"),
    "adjudication": _e("an adjudication workflow for disagreements"),
    "bws_config": _e("best-worst scaling tuples"),
    "ibws_config": _e("iterative best-worst scaling"),
    "mace": _e("MACE competence estimates that change what is exported"),
    "icl_labeling": _e("an LLM labelling items with agreed labels as in-context examples; model_training with "
                       "trainer: llm-zero-shot labels every item with an LLM fitted to the labelled items "
                       "(writeback.include_unlabeled: true shows its labels as suggestions)"),
    "llm_labeling": _e("LLM labelling of items"),
    "psychometrics": _e("psychometric instruments shown to annotators"),
    "boundary_probing": _e("boundary-probing item generation"),
    "event_template": _e("multi-document event templates"),
    "corpus_map": _e("a corpus map view"),
    "truth_serum": _e("Bayesian truth serum questions"),
    "thinkaloud": _e("think-aloud audio recording"),
    "pocket": _e("the pocket mobile interface"),
    "keystroke_logging": _e("recording annotators' keystrokes"),
    "annotation_telemetry": _e("recording annotators' interaction telemetry"),
    "triage": _e("accept/reject triage of items"),
    "review_mode": _e("review of earlier annotations"),
    "review_workflow": _e("a reviewer workflow over annotations"),
    "solo_mode": _e("single-annotator mode with labelling models"),
    "live_agent": _e("a live AI agent that annotators interact with"),
    "live_coding_agent": _e("a live coding agent"),
    "agent_proxy": _e("a proxy to AI agents for annotation"),
    "trace_ingestion": _e("ingesting agent traces as items"),
    "datasets": _e("evaluation datasets built from annotations"),
    "automation": _e("automation rules over annotations"),
    "curation": _e("dataset curation"),
    "arena": _e("a model arena"),
    "judge_alignment": _e("aligning an LLM judge with annotators"),
    "cot_segmentation": _e("chain-of-thought segmentation"),
    "audio_annotation": _e("audio annotation settings"),
    "spectrogram": _e("audio spectrograms"),
    "default_video_fps": _e("video annotation settings"),
    "format_handling": _e("rendering PDFs, spreadsheets or markup in items"),
    "list_as_text": _w("other layouts of an item text that is a list (this server shows its entries as "
                       "lines A., B., C., upstream's default)"),
    "highlight_linebreaks": _w("marking line breaks in the item text"),
    "horizontal_key_bindings": _w("keyboard shortcuts laid out along a row"),
    "allow_phase_back_navigation": _e("going back between study phases"),
    "require_fully_annotated": _e("refusing to move on until every scheme is answered "
                                  "(use label_requirement: {required: true} on the schemes)"),
    "scheme_sets": _e("different schemes for different items"),
    "item_store": _e("an external item store"),
    "embeddings": _e("item embeddings"),
    # which items an annotator gets
    "automatic_assignment": _e("assigning a fixed number of items to each annotator"),
    "batch_assignment": _e("assigning batches of items to groups of annotators"),
    "min_annotators_per_instance": _e("the fewest annotators per item"),
    "per_annotator_quota": _e("per-annotator quotas"),
    "reclaim_stale_assignments": _e("taking back items an annotator left unfinished"),
    "instance_reclaim": _e("taking back items an annotator left unfinished"),
    "max_session_seconds": _e("a limit on one annotation session"),
    # what is stored and where
    "data_directory": _e("loading every file of a folder as items"),
    "data_directory_encoding": _e("the encoding of a data_directory"),
    "data_sources": _e("items from URLs, databases or cloud storage"),
    "data_cache": _e("caching remote data sources"),
    "watch_data_directory": _e("adding items while the server runs"),
    "watch_poll_interval": _e("how often a watched data folder is read"),
    "partial_loading": _e("loading items in parts"),
    "database": _e("keeping annotations in MySQL or another database (this server keeps them in SQLite)"),
    "export_include_annotation_changes": _w("each change of an answer in exports"),
    "huggingface_backup": _e("copying annotations to the Hugging Face Hub"),
    "webhooks": _e("sending annotations to web hooks"),
    "publish": _e("publishing the dataset"),
    "dataset_metadata": _w("metadata for a published dataset"),
    "agreement_metrics": _w("agreement figures on the admin dashboard"),
    "analytics": _w("an analytics dashboard"),
    "annotator_dashboard": _w("a progress dashboard for annotators"),
    # looks
    "ui": _w("interface options of upstream's page"),
    "ui_config": _w("interface options of upstream's page"),
    "ui_language": _w("translated interface texts"),
    "layout": _w("a custom page layout"),
    "task_layout": _w("a custom page layout"),
    "base_css": _w("a custom style sheet"),
    "base_html_template": _e("a custom page template (this server renders its own pages)"),
    "header_file": _e("a custom page header"),
    "header_logo": _w("a logo in the page header"),
    "custom_footer_html": _w("custom footer HTML"),
    "site_file": _e("a custom page template (this server renders its own pages)"),
    "customjs": _e("custom JavaScript in the page"),
    "customjs_hostname": _e("custom JavaScript in the page"),
    "ui_debug": _w("upstream's interface debugging"),
    # running the server
    "env_substitution": _e("${VAR} substitution in the config file"),
    "debug_phase": _w("upstream's debug start page"),
    "debug_log": _w("upstream's debug logging"),
    "server_debug": _w("upstream's debug mode"),
    "verbose": _w("upstream's verbose logging (the server logs to its terminal)"),
    "very_verbose": _w("upstream's verbose logging (the server logs to its terminal)"),
    "secret_key": _w("the session signing key (this server keeps its own, in output_annotation_dir/secret_key)"),
}
"""Top-level keys of upstream Potato this server does not honour."""

SCHEME_KEYS: Mapping[str, Feature] = {
    "session_level": _e("one answer per session instead of per item"),
    "per_step": _e("one answer per step of an agent trace"),
    "video_as_label": _e("videos as labels"),
    "dynamic_options": _e("options taken from each item"),
    "dynamic_options_field": _e("options taken from each item"),
    "options_from_data": _e("options taken from each item"),
    "bad_text_label": _e("an extra \"bad text\" answer"),
    "display_config": _w("display options of the labels"),
    "displaying_score": _w("hiding the point numbers of a likert scale"),
    "label_content": _w("custom label contents"),
    "annotation_id": _w("a fixed id for the scheme in upstream's exports"),
    "cols": _w("the width of a text box"),
    "columns": _w("a grid of the labels' buttons"),
    "arrangement": _w("the order of a multirate scheme's rows in columns"),
}
"""Scheme keys of upstream Potato this server does not honour."""

SCHEME_TYPES: Mapping[str, str] = {
    "coreference": "coreference chains over spans",
    "event_annotation": "events over spans",
    "image_annotation": "drawing boxes and polygons on images",
    "audio_annotation": "segmenting audio",
    "video_annotation": "segmenting video",
    "video": "a video player",
    "bws": "best-worst scaling",
    "error_span": "marking error spans with severities",
    # Upstream's agent-evaluation types: each reads the item's steps or turns itself.
    "code_review": "reviewing a coding agent's diff with comments per line",
    "temporal_grounding": "placing events on a video's timeline",
    "rollout_evaluation": "finding where a world model's rollout breaks",
}
"""Upstream annotation types other than the ones this server draws (radio, multiselect, text,
likert, select, slider, number, span); types not listed get the generic message."""


OUR_OWN: Mapping[str, tuple[str, ...]] = {
    "base_html_template": ("default",),
    "header_file": ("default",),
}
"""Values of a key above that ask for upstream's own page, which here means this server's: honoured
by being what the server does anyway."""


def unsupported_message(key: str, what: str) -> str:
    """The sentence every refused or ignored upstream feature gets."""
    return (f"'{key}' is a Potato feature this server does not support: {what}; remove it or run that "
            "project on upstream Potato")
