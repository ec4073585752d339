"""Why a push cannot go ahead, in plain words with what to do: a model that stayed on the training
machine (from the run's :class:`~potato.server.training.runs.modelplace.ModelPlace`) and what a Hub
error means. Pure: each reads only its arguments, so every wording is tested without the Hub.
"""

from __future__ import annotations

import json

from potato.server.training.runs.modelplace import Kept, ModelPlace

TOKENS_PAGE = "https://huggingface.co/settings/tokens"


# -- a model that is not here ----------------------------------------------------------------------

def stayed_reason(place: ModelPlace, backend_name: str) -> str:
    """Why some or all of a run's model is not on this server, from what its backend recorded, with
    what to do."""
    host = place.host or "the training machine"
    folder = place.host_folder or "the run's job folder there"
    upload = f"hf upload <repo> {folder}"
    if place.partial:
        files = f" ({', '.join(place.kept_files)})" if place.kept_files else ""
        limit = f" ({place.limit_mb} MB)" if place.limit_mb else ""
        return (f"Part of the model stayed on {host} at {folder}{files}: those files exceeded max_artifact_mb"
                f"{limit} of backend '{backend_name}', so this server holds only part "
                f"of the model, which would not load from the Hub. Raise max_artifact_mb and train again, or push "
                f"the whole folder from {host}: {upload}")
    if place.kept is Kept.TOTAL_CAP:
        why = (f"the model files together exceeded max_artifacts_total_mb ({place.limit_mb} MB) of backend "
               f"'{backend_name}', so none was copied back")
        fix = f"Raise max_artifacts_total_mb and train again, or push it from {host}: {upload}"
    elif place.kept is Kept.NOT_FETCHED:
        why = f"fetch_artifacts is off for backend '{backend_name}'"
        fix = f"Set fetch_artifacts: true there and train again, or push it from {host}: {upload}"
    elif place.kept is Kept.ON_AGENT:
        why = f"runs on the agent backend '{backend_name}' keep their model files on the training machine"
        fix = f"Push it from {host}: {upload}"
    else:
        why = "it was not copied back to this server"
        fix = f"Push it from {host}: {upload}"
    return f"The model stayed on {host} at {folder}: {why}. This server has no copy to push. {fix}"


def unreported_reason(machine: str, backend_name: str) -> str:
    """An agent backend's run that reported no model folder: its files, if any, are on ``machine``."""
    return (f"The model stayed on {machine}: runs on the agent backend '{backend_name}' keep their model files "
            "in the agent's --workdir (jobs/<run>/artifacts), and this one reported no folder. This server has "
            f"no copy to push. Push it from {machine}: hf upload <repo> <that folder>")


# -- what a Hub error means -------------------------------------------------------------------------

_NETWORK = {"TransportError", "NetworkError", "ConnectError", "TimeoutException", "ProxyError", "RemoteProtocolError",
            "ConnectionError", "TimeoutError"}


def _status(exc: BaseException) -> int | None:
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    return status if isinstance(status, int) else None


def _phase(exc: BaseException, default: str) -> str:
    """What the push was doing when the Hub answered, from the request's path."""
    try:
        path = str(exc.response.request.url)  # type: ignore[attr-defined]
    except Exception:
        try:  # no answer at all (a network error): the request it was sending
            path = str(exc.request.url)  # type: ignore[attr-defined]
        except Exception:
            return default
    for marker, words in (("/commit/", "committing the files"), ("/preupload/", "preparing the upload"),
                          ("/validate-yaml", "checking the model card"), ("/repos/create", "creating the repository"),
                          ("/info/lfs", "uploading the large files"), ("xet", "uploading the large files")):
        if marker in path:
            return words
    return default


def _server_words(exc: BaseException) -> str:
    words = getattr(exc, "server_message", None)
    if not isinstance(words, str) or not words.strip():
        return ""
    return ": " + " ".join(words.split())[:300]


def not_the_hub_message(exc: KeyError | json.JSONDecodeError, *, endpoint: str, doing: str) -> str:
    """An answer that is not the Hub API's (pure): huggingface_hub follows redirects, and a redirect off
    the API (an address that moved, a proxy's sign-in page) ends in a page without the fields it reads
    (``KeyError: 'url'``) or in no JSON at all."""
    lacked = f"without the {exc.args[0]!r} the Hub sends" if isinstance(exc, KeyError) and exc.args else "not in JSON"
    outcome = ("the Hub did not confirm a commit, so look at the repository before you push again"
               if doing == "committing the files" else "nothing was pushed")
    return (f"The answer to {doing} did not come from the Hub's API: {endpoint} answered {lacked}. A redirect to "
            "another address (which huggingface_hub follows) or a proxy answering in the Hub's place does this. Check "
            "that HF_ENDPOINT in the server's environment, if set, is the Hub's https address, and that a proxy lets "
            f"this server through (HTTPS_PROXY); {outcome}.")


def hub_error_message(exc: BaseException, *, repo_id: str, token_from: str, endpoint: str, phase: str) -> str:
    """The Hub's refusal or failure in plain words, with what to do (pure: reads only the exception)."""
    doing = _phase(exc, phase)
    status = _status(exc)
    said = _server_words(exc)
    namespace = repo_id.split("/")[0] if "/" in repo_id else "your account"
    if status == 401:
        return (f"The Hub refused the token (HTTP 401 while {doing}): it is wrong, expired or revoked. The token "
                f"comes from {token_from}; put a token with write access there (from {TOKENS_PAGE}) and push again.")
    if status == 403:
        return (f"The Hub refused to let this token write to {repo_id} (HTTP 403 while {doing}{said}). Use a token "
                f"with write access to {namespace} (a fine-grained token needs it granted for that namespace); the "
                f"token comes from {token_from}.")
    if status == 404:
        return (f"The Hub has no repository {repo_id} that this token may see (HTTP 404 while {doing}{said}). Check "
                f"the namespace: a user or organization the token's account belongs to.")
    if status in (400, 422) and doing == "creating the repository":
        return (f"The Hub refused the repository name {repo_id} (HTTP {status}{said}). Pick another name: letters, "
                "digits, '-', '_' and '.', at most 96 characters.")
    if status == 429:
        return f"The Hub is limiting this account's requests (HTTP 429 while {doing}); push again in a few minutes."
    if status is not None and status >= 500:
        return (f"The Hub failed on its side (HTTP {status} while {doing}{said}) and confirmed no commit. Push "
                "again later; https://status.huggingface.co says whether the Hub has trouble.")
    if status is not None:
        return f"The Hub answered HTTP {status} while {doing}{said}; nothing was pushed."
    names = {cls.__name__ for cls in type(exc).__mro__}
    if "HFValidationError" in names:
        return f"{repo_id!r} is not a repository name the Hub takes: {exc}"
    if isinstance(exc, ValueError) and "metadata in README.md" in str(exc):
        return f"The Hub refused the model card's metadata ({' '.join(str(exc).split())[:300]}); nothing was pushed."
    if isinstance(exc, (KeyError, json.JSONDecodeError)):
        return not_the_hub_message(exc, endpoint=endpoint, doing=doing)
    if "OfflineModeIsEnabled" in names:
        return ("The server's environment sets HF_HUB_OFFLINE, which keeps huggingface_hub off the network; unset it "
                "for the server (the workers' own setting is apart) and restart it to push.")
    if names & _NETWORK or isinstance(exc, (ConnectionError, TimeoutError)):
        reason = " ".join(str(exc).split())[:200] or type(exc).__name__
        outcome = ("the Hub did not confirm the commit, so look at the repository before you push again"
                   if doing == "committing the files" else "nothing was pushed")
        return (f"Could not reach the Hub at {endpoint} while {doing} ({reason}). Check that this server can open "
                f"https connections there (a proxy needs HTTPS_PROXY in the server's environment); {outcome}.")
    return f"The push failed while {doing}: {type(exc).__name__}: {' '.join(str(exc).split())[:300]}"


def redact(text: str, secret: str | None) -> str:
    """``text`` with ``secret`` blotted out, the last guard before a message is kept anywhere."""
    if secret and len(secret) >= 4:
        text = text.replace(secret, "[token]")
    return text
