"""C1: item loading from json, jsonl and csv, with errors that name the file and line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from potato.errors import DataError
from potato.items import load_items


def test_json_list_jsonl_and_csv_load_in_order(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text(json.dumps([{"id": 1, "text": "one"}, {"id": "2", "text": "two"}]))
    (tmp_path / "b.jsonl").write_text('{"id": "3", "text": "three"}\n\n{"id": "4", "text": "four"}\n')
    (tmp_path / "c.csv").write_text('id,text\n5,"five, with comma"\n')
    items = load_items([tmp_path / "a.json", tmp_path / "b.jsonl", tmp_path / "c.csv"])
    assert items.ids == ("1", "2", "3", "4", "5")
    assert items.get("5").text == "five, with comma"
    assert items.position("3") == 2


def test_custom_keys(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_text('{"uid": "x", "body": "hello"}\n')
    items = load_items([tmp_path / "a.jsonl"], id_key="uid", text_key="body")
    assert items.at(0).text == "hello"


def test_missing_id_names_file_line_and_fix(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_text('{"id": "1", "text": "a"}\n{"ident": "2", "text": "b"}\n')
    with pytest.raises(DataError) as err:
        load_items([tmp_path / "a.jsonl"])
    msg = str(err.value)
    assert f"{tmp_path / 'a.jsonl'}:2" in msg and "missing id key 'id'" in msg and "item_properties.id_key" in msg
    assert "ident" in msg


def test_duplicate_id_names_both_places(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_text('{"id": "1", "text": "a"}\n')
    (tmp_path / "b.csv").write_text("id,text\n2,b\n1,c\n")
    with pytest.raises(DataError) as err:
        load_items([tmp_path / "a.jsonl", tmp_path / "b.csv"])
    msg = str(err.value)
    assert f"{tmp_path / 'b.csv'}:3: duplicate id '1' (first at {tmp_path / 'a.jsonl'}:1)" in msg


def test_bad_json_line(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_text('{"id": "1", "text": "a"}\n{"id": 2,\n')
    with pytest.raises(DataError, match=r"a\.jsonl:2: not valid JSON"):
        load_items([tmp_path / "a.jsonl"])


def test_unreadable_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="data file not found"):
        load_items([tmp_path / "nope.json"])
    (tmp_path / "bin.jsonl").write_bytes(b'{"id": "a", "text": "fine"}\n{"id": "b", "text": "caf\xe9"}\n')
    with pytest.raises(DataError, match=r"bin.jsonl:2: not UTF-8 text \(byte 0xe9\)"):  # a line, not an offset
        load_items([tmp_path / "bin.jsonl"])
    (tmp_path / "x.xml").write_text("<a/>")
    with pytest.raises(DataError, match="unsupported data file type '.xml'"):
        load_items([tmp_path / "x.xml"])


def test_missing_text_and_empty(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text(json.dumps([{"id": "1"}]))
    with pytest.raises(DataError, match=r"record 1\): missing text key 'text'"):
        load_items([tmp_path / "a.json"])
    (tmp_path / "e.jsonl").write_text("\n")
    with pytest.raises(DataError, match="No items"):
        load_items([tmp_path / "e.jsonl"])


def test_csv_keeps_line_breaks_in_quoted_fields_and_names_an_unclosed_quote(tmp_path: Path) -> None:
    good = tmp_path / "good.csv"
    good.write_text('id,text\n1,"line one\nline two"\n2,plain\n')
    assert [(i.id, i.text) for i in load_items([good])] == [("1", "line one\nline two"), ("2", "plain")]
    bad = tmp_path / "bad.csv"
    bad.write_text('id,text\n1,"two\nlines"\n2,plain\n3,"never closed\n4,would be lost\n5,so would this\n')
    with pytest.raises(DataError, match=r"bad.csv:5: a quoted field that starts on this line is never closed"):
        load_items([bad])
    wide = tmp_path / "wide.tsv"
    wide.write_text("id\ttext\n1\ta\tb\n")
    with pytest.raises(DataError, match=r"wide.tsv:2: this row has more fields than the header line"):
        load_items([wide])


def test_a_lone_surrogate_in_an_id_is_named_with_its_record(tmp_path: Path) -> None:
    """`potato start` ended in a raw traceback for it (SQLite refuses the text)."""
    path = tmp_path / "items.json"
    path.write_text('[{"id": "ok", "text": "x"}, {"id": "\\ud800", "text": "y"}]')
    with pytest.raises(DataError, match=r"items.json \(record 2\): the id holds a lone surrogate"):
        load_items([path])


def test_item_text_holding_media_tags_is_refused(tmp_path: Path) -> None:
    """Upstream Potato renders item text as HTML; a <video> item here would show its tag (issue 12)."""
    path = tmp_path / "items.jsonl"
    path.write_text('{"id": "1", "text": "a <3 b"}\n{"id": "2", "text": "<video width=\\"320\\"><source src=\\"1.mp4\\"></video>"}\n')
    with pytest.raises(DataError) as err:
        load_items([path])
    assert str(err.value).startswith(f"{path}:2: the text holds an HTML <video> tag.")
