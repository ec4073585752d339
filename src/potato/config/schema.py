"""Typed project configuration: what the rest of Potato reads.

These dataclasses are built only by :func:`potato.config.validate.validate`, which has already
checked every key and value, so code that reads them never re-validates. Paths are absolute:
the validator resolves them against the config file's folder.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Protocol

from potato import defaults
from potato.study.platforms import Crowdsourcing
from potato.study.phases import Phases
from potato.display.fields import span_texts
from potato.display.turns import step_turns, turns_of
from potato.training.job.turns import Turn
from potato.display.keywords import Keyword, KeywordSettings
from potato.training.launch.containers import ContainerSpec
from potato.training.job.schemes import Scheme
from potato.items import shown_text
from potato.edits import Originals, trajectory_originals
from potato.reviews import KINDS as REVIEW_KINDS
from potato.reviews import Part, parts_of
from potato.teams import Team, team_of


FREE_RESPONSE = "free_response"
"""Upstream's label name for the free-text box that ``has_free_response`` adds to a scheme."""
FREE_RESPONSE_INSTRUCTION = "Other (please specify)"
EXPORT_FORMATS = ("jsonl", "csv", "tsv")
"""The layouts of upstream's exporters that ``output_annotation_format`` may name."""


def export_format(name: str) -> str:
    """Upstream's reading of ``output_annotation_format``: ``json`` is its ``jsonl`` exporter."""
    return "jsonl" if name == "json" else name


JUSTIFICATION = "justification"
"""Upstream's label name of a pairwise comparison's reasons and rationale (one JSON text)."""


def justification_name(scheme: str) -> str:
    """The stored name of a pairwise comparison's justification: an answer of its own, so the
    comparison's stays one choice."""
    return f"{scheme}:{JUSTIFICATION}"


def free_response_name(scheme: str) -> str:
    """The stored name of ``scheme``'s free-text box: an answer of its own, so the scheme's labels
    stay one class (or one set) for the trainers."""
    return f"{scheme}:{FREE_RESPONSE}"


@dataclass(frozen=True)
class ItemProperties:
    id_key: str = "id"
    text_key: str = "text"


@dataclass(frozen=True)
class Writeback:
    """Which predictions return to annotators as model suggestions."""

    schemas: tuple[str, ...] = ()
    include_unlabeled: bool = False
    min_confidence: float = 0.0


@dataclass(frozen=True)
class AutoRetrain:
    """Start a run on its own every ``every_n_labels`` new labels."""

    enabled: bool = False
    every_n_labels: int = defaults.AUTO_RETRAIN_EVERY_N_LABELS
    trainer: str | None = None
    schemas: tuple[str, ...] = ()
    backend: str | None = None
    min_items: int = 0
    """No run before this many items have labels on the schemas (active learning's first run)."""
    min_annotations_per_item: int = 1
    """What counts as a labelled item for ``min_items``: this many annotators' labels."""


UNCERTAINTY_MEASURES = ("least_confidence", "margin", "entropy")


@dataclass(frozen=True)
class ActiveLearning:
    """Items nobody has labelled go to annotators most uncertain first, by the latest run on ``schemas``
    (upstream Potato's ``active_learning``); its runs start as automatic runs do."""

    enabled: bool = False
    schemas: tuple[str, ...] = ()
    min_annotations_per_item: int = 1
    min_items: int = defaults.ACTIVE_LEARNING_MIN_ITEMS
    every_n_labels: int = defaults.ACTIVE_LEARNING_EVERY_N_LABELS
    max_reordered: int | None = None
    """How many of the most uncertain items are put first (None: every item nobody has labelled); the
    rest keep the assignment's order."""
    random_share: float = defaults.ACTIVE_LEARNING_RANDOM_SHARE
    """Of the items put first, this share is drawn at random instead (upstream's random_sample_percent)."""
    uncertainty: str = UNCERTAINTY_MEASURES[0]
    trainer: str | None = None
    backend: str | None = None
    cold_start: bool = False
    """Before the first model, an llm-zero-shot run orders the items (upstream's ``cold_start_strategy: llm``)."""
    cold_start_params: dict[str, object] = field(default_factory=dict)
    """That run's llm-zero-shot parameters (``base_model`` from upstream's ``llm.model_name``)."""


@dataclass(frozen=True)
class OptionHighlighting:
    """Upstream's ``ai_support.option_highlighting``: a question's ``top_k`` most likely options stay
    as they are, the others are dimmed to ``dim_opacity`` (still clickable)."""

    schemas: tuple[str, ...] = ()
    """The highlighted schemes (as read: empty for upstream's default, every radio and multiselect
    scheme that is written back; the loaded config names them)."""
    top_k: int = 3
    dim_opacity: float = 0.4


@dataclass(frozen=True)
class LlmService:
    """An OpenAI-compatible chat server the admin names (``endpoint_type`` ollama, vllm, openai or
    openai_compatible): the server asks it which options fit an item, in the background.

    The key is never held here: only where to read it when a call is made (an environment variable
    or a file), so a config printed or logged carries no secret."""

    kind: str
    base_url: str
    """Up to and including ``/v1``: ``{base_url}/chat/completions`` is called."""
    model: str
    temperature: float = 0.1
    max_tokens: int = 100
    timeout: float = 30.0
    key_env: str | None = None
    key_file: Path | None = None
    calls_per_minute: int = 60
    """The project's calls to the server in any 60 s, all annotators and server processes together."""
    max_calls: int | None = None
    """No call after this many (None: no cap): a paid service's bill has a ceiling."""
    ahead: int = 5
    """Items asked about ahead of each annotator, so the next page's answer is ready."""
    warm_up: int = 0
    """The first items asked about when the server starts (in the background)."""


@dataclass(frozen=True)
class ChatSupport:
    """Upstream's ``chat_support``: a panel beside the item where the annotator asks an LLM server
    about it; each turn is kept per annotator and item."""

    service: LlmService
    title: str = "Ask AI"
    placeholder: str = "Ask about this annotation..."
    sidebar_width: int = 380
    max_history: int = 50
    """Turns kept (and sent back to the LLM) per annotator and item."""
    template: str | None = None
    """``system_prompt.template`` with {task_name}, {task_description}, {annotation_labels},
    {instance_text}, {instance_id}; None: this server's own."""


@dataclass(frozen=True)
class JudgeCalibration:
    """Upstream's ``judge_calibration``: each judge (an LLM server) answers every item's single-choice
    questions ``k_samples`` times; the modal answer is its label and the share of answers that agree
    is its confidence. A sample of the items, drawn when the judges are done, is what the annotators'
    labels (blind: the judges' answers are never shown) are compared with."""

    judges: tuple[LlmService, ...]
    out_dir: Path
    """``output.dir``: llm_labels.jsonl, report.json and report.html are written there."""
    prompt: str = ""
    """The judge's instructions; {text}, {labels} and {description} are filled in where written."""
    k_samples: int = 5
    max_items: int | None = None
    fraction: float | None = None
    """Items judged: the first ``max_items`` (it wins), or this share of them; both None: all."""
    strategy: str = "stratified"
    stratify_by: str | None = None
    """An item field to stratify the sample by; None: the first judge's label."""
    sample_size: int = 200
    seed: int = 42
    num_raters: int = 1
    """Annotators wanted per sample item (shown on the admin page as how far the sample is)."""
    gold: str = "single"
    """``single``: the first annotator's label is the reference; ``majority``: the most common one."""
    schemas: tuple[str, ...] = ()
    ordinal: tuple[str, ...] = ()
    """The likert questions among ``schemas``: their report adds the mean distance from the reference."""
    n_bins: int = 10
    labels_file: str = "llm_labels.jsonl"
    report_json: str = "report.json"
    report_html: str = "report.html"


@dataclass(frozen=True)
class AssistHoldout:
    """``ai_support.assist_holdout``: a random share of annotators, drawn once each, sees no AI help and
    no model suggestions, so that what the help does to the labels can be measured."""

    share: float
    train_on: str = "all"
    """``unhelped``: runs train on the control group's labels only (a model never learns its own
    suggestions back)."""


@dataclass(frozen=True)
class AiSupport:
    """AI help for annotators (upstream Potato's ``ai_support``), from ``source``: ``runs``, the
    project's own trained models (the shown run's predictions), or an LLM server (``service``)."""

    enabled: bool = False
    source: str | None = None
    option_highlighting: OptionHighlighting | None = None
    service: LlmService | None = None
    holdout: AssistHoldout | None = None
    help_kinds: tuple[str, ...] = ()
    """Upstream's ``ai_config.include``: hint, keyword and rationale buttons beside each radio and
    multiselect question (an LLM server only)."""
    help_schemas: tuple[str, ...] = ()


Container = ContainerSpec
"""A backend's ``container``: the same type the agent takes and slurm.json carries."""


@dataclass(frozen=True)
class RemoteHost:
    """A host the server reaches with ssh: an ssh backend's machine or a SLURM cluster's login node.

    Only its subclasses are built; code that only connects, copies and cleans up takes this type.
    """

    name: str
    host: str
    remote_dir: str
    """Where runs live on the host. :class:`SshBackendSettings` gives it a default; a slurm backend has none,
    because its folder must be on storage the login and compute nodes share."""
    description: str = ""
    user: str | None = None
    port: int | None = None
    identity_file: str | None = None
    python: str = defaults.REMOTE_PYTHON
    min_free_gpu_mb: int = defaults.MIN_FREE_GPU_MB
    num_threads: int | None = None
    max_artifact_mb: int = defaults.MAX_ARTIFACT_MB
    max_artifacts_total_mb: int = defaults.MAX_ARTIFACTS_TOTAL_MB
    fetch_artifacts: bool = True
    keep_remote: bool = False
    keep_connection_s: int = defaults.KEEP_CONNECTION_S
    heartbeat_timeout_s: int = defaults.HEARTBEAT_TIMEOUT_S
    env: dict[str, str] = field(default_factory=dict)
    container: Container | None = None


@dataclass(frozen=True)
class SshBackendSettings(RemoteHost):
    """A host the server reaches with ssh."""

    remote_dir: str = defaults.REMOTE_DIR
    type: str = "ssh"
    packages: tuple[str, ...] = ()
    gpus: str = "auto"

    def describe(self) -> str:
        """The "Runs on" menu text."""
        return f"{self.name} (ssh to {self.host})"


@dataclass(frozen=True)
class SlurmBackendSettings(RemoteHost):
    """A SLURM cluster behind a login node; the agent runs on the login node."""

    type: str = "slurm"
    job_python: str | None = None
    prelude: tuple[str, ...] = ()
    partition: str | None = None
    account: str | None = None
    qos: str | None = None
    gres: str | None = None
    time: str | None = None
    mem: str | None = None
    cpus_per_task: int | None = None
    constraint: str | None = None
    extra_sbatch_args: tuple[str, ...] = ()
    poll_interval_s: float = defaults.SLURM_POLL_INTERVAL_S

    def describe(self) -> str:
        return f"{self.name} (slurm via {self.host})"


@dataclass(frozen=True)
class AgentBackendSettings:
    """A machine the server cannot reach; a registered agent polls for work."""

    name: str
    type: str = "agent"
    description: str = ""
    heartbeat_timeout_s: int = defaults.HEARTBEAT_TIMEOUT_S
    queue_timeout_s: int | None = None

    def describe(self) -> str:
        return f"{self.name} (agent{': ' + self.description if self.description else ''})"


@dataclass(frozen=True)
class LocalBackendSettings:
    """A subprocess on the server itself; always present."""

    name: str = defaults.LOCAL_BACKEND
    type: str = "local"
    description: str = "this machine"
    device: str = "auto"
    num_threads: int | None = None
    max_ram_mb: int | None = None
    pass_env: tuple[str, ...] = ()
    """Variables of the server's environment the worker may see (it gets an allow-list otherwise)."""

    def describe(self) -> str:
        return f"{self.name} (this machine)"


class BackendSettings(Protocol):
    """What the settings dataclass of every backend type has (the four above, or one a backend module
    registers with :func:`potato.config.register_backend_kind`): the server reads these and leaves the
    rest to the backend that owns them."""

    @property
    def name(self) -> str: ...

    @property
    def type(self) -> str: ...

    @property
    def description(self) -> str: ...

    def describe(self) -> str:
        """The "Runs on" menu text."""
        ...


HUB_NAME = r"[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,94}[A-Za-z0-9_])?"
"""One part of a Hugging Face Hub repository id (a namespace or a name), as the Hub takes it; the Hub
also refuses ``--`` and ``..`` inside one."""


@dataclass(frozen=True)
class HubSettings:
    """Pushing a run's model to the Hugging Face Hub: where the token is read from (``HF_TOKEN`` in the
    server's environment when no file is named) and the namespace a default repository goes under."""

    token_file: Path | None = None
    organization: str | None = None


@dataclass(frozen=True)
class ModelTraining:
    enabled: bool = False
    backend: str = defaults.LOCAL_BACKEND
    trainer: str = defaults.TRAINER
    max_wall_seconds: int | None = None
    grace_seconds: int = defaults.GRACE_SECONDS
    max_predictions_mb: int = defaults.MAX_PREDICTIONS_MB
    max_run_log_mb: int = defaults.MAX_RUN_LOG_MB
    disk_reserve_mb: int = defaults.DISK_RESERVE_MB
    holdout_fraction: float = defaults.HOLDOUT_FRACTION
    step_context_chars: int = defaults.STEP_CONTEXT_CHARS
    """How much of the trace before a step a step classifier reads with it (0: the step alone, for a
    bag-of-words trainer, which cannot tell the step's words from the context's)."""
    trainer_params: dict[str, dict[str, object]] = field(default_factory=dict)
    writeback: Writeback = field(default_factory=Writeback)
    auto_retrain: AutoRetrain = field(default_factory=AutoRetrain)
    local: LocalBackendSettings = field(default_factory=LocalBackendSettings)
    backends: dict[str, BackendSettings] = field(default_factory=dict)
    hub: HubSettings = field(default_factory=HubSettings)

    def all_backends(self) -> dict[str, BackendSettings]:
        """Every backend a run may name, ``local`` first."""
        out: dict[str, BackendSettings] = {self.local.name: self.local}
        out.update(self.backends)
        return out


@dataclass(frozen=True)
class Access:
    """Who may sign in, and how (upstream Potato's ``user_config``, ``require_password``, ``login``)."""

    allow_all_users: bool = True
    users: tuple[str, ...] = ()
    """With ``allow_all_users: false``, the only names that may sign in."""
    require_password: bool = False
    url_argument: str | None = None
    """``login: {type: url_direct}``: the query parameter that carries the annotator's name."""
    session_lifetime_days: int = defaults.SESSION_LIFETIME_DAYS

    def may_sign_in(self, name: str) -> bool:
        return self.allow_all_users or name in self.users


@dataclass(frozen=True)
class Assignment:
    """Which items each annotator gets (upstream Potato's assignment keys); inactive by default."""

    strategy: str = "fixed_order"
    max_annotations_per_user: int | None = None
    max_annotations_per_item: int | None = None
    random_seed: int = 0

    @property
    def active(self) -> bool:
        return (self.strategy != "fixed_order" or self.max_annotations_per_user is not None
                or self.max_annotations_per_item is not None)


@dataclass(frozen=True)
class DisplayField:
    """One field of an item shown to annotators (upstream Potato's ``instance_display``)."""

    key: str
    label: str = ""
    span_target: bool = False
    """Span schemes mark this field: the item's own text (``item_properties.text_key``) or another."""
    type: str = "text"
    """How it is shown: text, image, dialogue, code, spreadsheet, document or pdf (``potato.display.fields``)."""
    options: Mapping[str, Any] = field(default_factory=dict)
    """Upstream's ``display_options`` (an image's ``max_width``, code's ``language``...)."""


@dataclass(frozen=True)
class Page:
    """What annotators see around the items, from upstream Potato's page keys."""

    task_description: str = ""
    instructions: str = ""
    codebook_url: str | None = None
    hide_navbar: bool = False
    jumping_to_id_disabled: bool = False
    show_item_ids: bool | None = None
    """Show each item's id above it; None: yes, but not to a crowdsourcing study's participants (in a
    study of topics an id such as tech_2 gives the answer away)."""
    alert_time_each_instance: int | None = None
    """Seconds on one item before a gentle "still there?" note; None for never."""
    completion_code: str | None = None
    display_fields: tuple[DisplayField, ...] = ()
    """Fields shown for each item, in order; empty: the item's text (``item_properties.text_key``)."""
    display_horizontal: bool = False


@dataclass(frozen=True)
class Config:
    """The whole project as the server and CLI use it."""

    path: Path
    annotation_task_name: str
    task_dir: Path
    data_files: tuple[Path, ...]
    output_annotation_dir: Path
    annotation_schemes: tuple[Scheme, ...]
    admin_api_key: str | None = None
    item_properties: ItemProperties = field(default_factory=ItemProperties)
    debug: bool = False
    trust_proxy: bool = False
    """Behind a reverse proxy: client addresses and https come from its X-Forwarded-* headers."""
    model_training: ModelTraining = field(default_factory=ModelTraining)
    acknowledge: tuple[object, ...] = ()
    access: Access = field(default_factory=Access)
    page: Page = field(default_factory=Page)
    host: str | None = None
    port: int | None = None
    """Where ``potato start`` listens when its -p/--host flags are not given."""
    public_url: str | None = None
    """``server.public_url``: the address training machines reach this server under, for the commands
    ``potato training register`` prints (a reverse proxy's https address, a DNS name)."""
    assignment: Assignment = field(default_factory=Assignment)
    export_formats: tuple[str, ...] = ()
    """Formats (jsonl, csv, tsv) the server keeps written under output_annotation_dir/exports/, as
    upstream Potato does for ``output_annotation_format`` / ``export_annotation_format``."""
    auto_export_interval: int = defaults.AUTO_EXPORT_INTERVAL_S
    active_learning: ActiveLearning = field(default_factory=ActiveLearning)
    ai_support: AiSupport = field(default_factory=AiSupport)
    chat_support: ChatSupport | None = None
    judge_calibration: JudgeCalibration | None = None
    phases: Phases | None = None
    """The study's pages around the items (consent, surveys, training); None: the items alone."""
    codebook_mode: str | None = None
    """``fixed`` or ``extensible`` where a scheme's labels are a codebook (``codebook: true``); else None."""
    codebook_max_codes: int = defaults.CODEBOOK_MAX_CODES
    """Codes annotators may add to an extensible codebook in all (``codebook_max_codes``)."""
    codebook_max_codes_per_annotator: int = defaults.CODEBOOK_MAX_CODES_PER_ANNOTATOR
    """...and one annotator (``codebook_max_codes_per_annotator``)."""
    media_directory: Path | None = None
    """Where the image and PDF files items name are (``media_directory``), served at /media/."""
    keywords: tuple[Keyword, ...] = ()
    """``keyword_highlights_file``'s rows: words marked in each item's text for the label they speak for."""
    keyword_settings: KeywordSettings = field(default_factory=KeywordSettings)
    export_phase_data: bool = False
    """``export_include_phase_data``: exports carry the study pages' answers too."""
    crowdsourcing: Crowdsourcing | None = None
    """Where participants come from and how they go back (``crowdsourcing``, or ``login: {type:
    url_direct}``); None where annotators sign in by name."""

    def training_kinds(self) -> frozenset[str]:
        """The kinds of answer this project's trainable schemes give (radio, multiselect, span): a trainer
        that learns none of them is no choice here."""
        return frozenset(s.training_type for s in self.annotation_schemes if s.training_type)

    @property
    def span_fields(self) -> tuple[DisplayField, ...]:
        """The fields spans are marked on besides the item's own text (its text key shown as text); a
        span on one names it."""
        text_key = self.item_properties.text_key
        return tuple(f for f in self.page.display_fields if f.span_target and (f.key != text_key or f.type != "text"))

    def span_name(self, field: DisplayField) -> str:
        """The field a span on ``field`` names: ``""`` for the item's own text."""
        return "" if field not in self.span_fields else field.key

    def span_texts(self, item: Any) -> dict[str, str]:
        """An item's texts that spans mark, by the field a span names (``""``: the item's own text)."""
        return span_texts(item.text, item.data, self.span_fields)

    def item_turns(self, item: Any) -> dict[str, list[Turn]]:
        """An item's turns that a turn-level question is asked on, by their ``TurnBinding.source``:
        a display field's turns as the page draws them, or a list of steps read entry by entry."""
        bindings = [b for s in self.annotation_schemes for b in (s.turns, s.names_step) if b is not None]
        drawn = {b.field for b in bindings if b.steps_text is None}
        out = {f.key: turns_of(f.type, item.data.get(f.key), f.options)
               for f in self.page.display_fields if f.key in drawn}
        for b in bindings:
            if b.steps_text is not None:
                out[b.source] = step_turns(item.data.get(b.field), b.steps_text, b.speaker_key)
        return out

    def edit_sources(self, item: Any) -> dict[str, Originals]:
        """What each edit scheme has the annotator rewrite on ``item``, by scheme: a text edit the item's
        own text, or its field ``source_field`` as the page shows a text (none: an empty text); a
        trajectory edit the fields of its steps and its final answer."""
        out: dict[str, Originals] = {}
        for s in self.annotation_schemes:
            if s.edit_source is not None:
                out[s.name] = Originals(text=item.text if not s.edit_source else shown_text(item.data.get(s.edit_source) or ""))
            elif s.edit_steps is not None:
                out[s.name] = trajectory_originals(item.data, s.edit_steps, s.step_text_key, s.editable_fields,
                                                   s.final_answer_key)
        return out

    def teams(self, item: Any) -> dict[str, Team]:
        """The agents and turns each scorecard or behaviour scheme asks about on ``item``, by scheme."""
        return {s.name: team_of(item.data.get(s.team_steps), s.team_agent_key, s.agents)
                for s in self.annotation_schemes if s.team_steps is not None}

    def review_parts(self, item: Any) -> dict[str, list[Part]]:
        """The parts (tool calls, handoffs, steps, segments) each review scheme asks about on ``item``, by scheme."""
        return {s.name: parts_of(REVIEW_KINDS[s.annotation_type.value], item.data.get(s.review_steps), dict(s.review_reads))
                for s in self.annotation_schemes if s.review_steps is not None}

    def scheme(self, name: str) -> Scheme | None:
        for s in self.annotation_schemes:
            if s.name == name:
                return s
        return None

    @property
    def database_path(self) -> Path:
        return self.output_annotation_dir / "potato.sqlite3"

    @property
    def training_dir(self) -> Path:
        return self.output_annotation_dir / "training"


@dataclass(frozen=True)
class Issue:
    """One validator finding: where (dotted key path), what is wrong, and the fix."""

    path: str
    message: str
    backend: str | None = None

    def __str__(self) -> str:
        return self.message


@dataclass
class Report:
    """What :func:`validate` found. ``config`` is None when there are errors."""

    config: Config | None
    errors: list[Issue] = field(default_factory=list)
    warnings: list[Issue] = field(default_factory=list)
    acknowledged: list[Issue] = field(default_factory=list)
    source: str = ""
    """The config file as the user named it, for the report's last line."""

    @property
    def ok(self) -> bool:
        return not self.errors

    def strict_ok(self) -> bool:
        return not self.errors and not self.warnings
