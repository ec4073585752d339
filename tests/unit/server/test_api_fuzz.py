"""Bad input gets a clear 4xx, never a 500: any JSON body on the write routes (hypothesis)."""

from __future__ import annotations

from typing import Any, Dict

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8)
    | st.sampled_from(["r000", "sentiment", "positive", "aspects", "price", "note", "next_unlabelled"]),
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.sampled_from(["id", "labels", "go", "accepted", "user", "schema", "label", "skip_invalid",
                                       "sentiment", "aspects", "note"]) | st.text(max_size=5), inner, max_size=5),
    max_leaves=20,
)
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


_CLIENTS: Dict[int, Any] = {}


def signed_in(app: Any) -> Any:
    """One signed-in client per app for all of hypothesis' examples (sign-ins are throttled per address)."""
    if id(app) not in _CLIENTS:
        _CLIENTS.clear()
        _CLIENTS[id(app)] = app.test_client()
        _CLIENTS[id(app)].post("/login", data={"name": "fuzz"})
    return _CLIENTS[id(app)]


@SETTINGS
@given(body=json_values)
def test_label_route_never_500(app: Any, body: Any) -> None:
    client = signed_in(app)
    assert client.post("/api/label", json=body).status_code in (200, 400)


@SETTINGS
@given(body=json_values)
def test_labels_api_never_500(app: Any, admin_headers: Dict[str, str], body: Any) -> None:
    assert app.test_client().post("/admin/api/labels", json=body, headers=admin_headers).status_code in (200, 400)
