
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from checkers.formats import detect_format, read_any
from checkers.formats.edn import (
    EdnError,
    Keyword,
    Parser,
    Symbol,
    dumps,
    iter_collection,
    iter_forms,
    loads,
)
from checkers.formats.edn_fast import op_maps
from checkers.formats.jepsen import plain, read_edn_history, write_edn_history
from checkers.history import NEMESIS, HistoryError, Op, validate


@pytest.mark.parametrize("text, value", [
    ("nil", None), ("true", True), ("false", False),
    ("42", 42), ("-7", -7), ("+3", 3), ("12N", 12), ("0", 0),
    ("1.5", 1.5), ("-2e3", -2000.0), ("1.25M", 1.25),
    ('"a\\tb\\n\\"q\\"\\\\ \\u00e9"', 'a\tb\n"q"\\ \u00e9'),
    ("\\a", "a"), ("\\newline", "\n"), ("\\u0041", "A"),
    (":read", "read"), (":jepsen.history/op", "jepsen.history/op"),
    ("[1 2, 3]", [1, 2, 3]), ("(1 (2))", [1, [2]]),
    ("{:a 1, :b [2]}", {"a": 1, "b": [2]}),
    ("#{1 2}", frozenset({1, 2})),
    ("[1 #_ 2 3]", [1, 3]), ("[1 #_ #_ 2 3 4]", [1, 4]),
    ("; comment\n[1 ; two\n 2]", [1, 2]),
    ('#inst "2024-01-01T00:00:00Z"', "2024-01-01T00:00:00Z"),
    ("#jepsen.history.Op{:f :read}", {"f": "read"}),
    ("{[1 2] :x}", {(1, 2): "x"}),
    ("foo/bar", "foo/bar"), ("-", "-"), ("->x", "->x"),
])
def test_values(text, value):
    assert loads(text) == value


def test_keyword_and_symbol_types():
    assert type(loads(":a")) is Keyword and type(loads("a")) is Symbol


@pytest.mark.parametrize("text", [
    "", "[1 2", "1 2", "{:a}", "{:a 1 :a 2}", "#{1 1}", '"abc', '"\\q"', "12abc",
    "007", "]", "#", "#_", "::a", "#{1", "\\", "##Foo", '"\\ud800"', "1.2.3",
    "#inst 5", "[" * 500 + "]" * 500, "#_ " * 500 + "1", "#a " * 500 + "1",
    "1" * 500,
])
def test_rejects(text):
    with pytest.raises(EdnError):
        loads(text)


def test_error_offset():
    with pytest.raises(EdnError) as e:
        loads("[1 2 }")
    assert e.value.offset == 5


def test_iter_forms():
    assert [v for _, v in iter_forms("1 #_ 2 [3]\n:x")] == [1, [3], "x"]


@pytest.mark.parametrize("value", [
    None, True, 3, -1.5, "text \"with\" \\ escapes\n\x01é", [1, [2, "x"]],
    {"a": [1, None], "b": {"c": 2}}, [], {},
])
def test_dumps_round_trip(value):
    assert loads(dumps(value)) == value


JEPSEN_LINES = """\
{:type :invoke, :f :write, :value 3, :process 0, :time 100, :index 0}
{:type :invoke, :f :read, :value nil, :process 1, :time 150, :index 1}
{:type :info, :f :start-partition, :value nil, :process :nemesis, :time 160, :index 2}
{:type :ok, :f :write, :value 3, :process 0, :time 200, :index 3}
{:type :ok, :f :read, :value 3, :process 1, :time 250, :index 4}
{:type :info, :f :start-partition, :value [:isolated {"n1" #{"n2"}}], :process :nemesis,
 :time 300, :index 5}
"""


def test_jepsen_one_map_per_line(tmp_path):
    path = tmp_path / "history.edn"
    path.write_text(JEPSEN_LINES)
    ops = read_edn_history(path)
    assert ops[0] == Op(0, 100, 0, "invoke", "write", 3)
    assert ops[2].process == NEMESIS and ops[2].f == "start-partition"
    assert ops[5].value == ["isolated", {"n1": ["n2"]}]
    assert all(type(o.f) is str and type(o.type) is str for o in ops)
    assert detect_format(path) == "edn"


def test_jepsen_vector_without_index_or_time(tmp_path):
    path = tmp_path / "history.edn"
    path.write_text("; a Jepsen history\n[{:type :invoke, :f :cas, :value [1 2], :process 3}\n"
                    " {:type :fail, :f :cas, :value [1 2], :process 3, :error :mismatch}\n"
                    " {:type :invoke, :f :read, :process 4}\n"
                    " {:type :info, :f :read, :process 4, :error [:timeout 5]}]\n")
    ops = read_edn_history(path)
    assert [(o.index, o.time) for o in ops] == [(0, 0), (1, 1), (2, 2), (3, 3)]
    assert ops[1] == Op(1, 1, 3, "fail", "cas", [1, 2], error="mismatch")
    assert ops[3].error == "[\"timeout\" 5]"
    assert validate(ops) == []


def test_jepsen_independent_keys(tmp_path):
    path = tmp_path / "history.edn"
    path.write_text("{:type :invoke, :f :write, :value [7 3], :process 0}\n"
                    "{:type :info, :f :kill, :value :all, :process :nemesis}\n"
                    "{:type :ok, :f :write, :value [7 3], :process 0}\n")
    ops = read_edn_history(path, independent=True)
    assert (ops[0].key, ops[0].value) == (7, 3)
    assert (ops[1].key, ops[1].value) == (None, "all")
    assert read_any(path, "edn", independent=True).ops == ops
    path.write_text("{:type :invoke, :f :write, :value 3, :process 0}\n")
    with pytest.raises(HistoryError, match="key value"):
        read_edn_history(path, independent=True)


def test_write_read_round_trip(tmp_path):
    ops = [
        Op(0, 10, 0, "invoke", "txn", [["append", 1, 5], ["r", 2, None]], node="n1"),
        Op(1, 20, "nemesis", "invoke", "partition", {"nodes": ["n1"], "cut": [["n1", "n2"]]}),
        Op(2, 30, 0, "ok", "txn", [["append", 1, 5], ["r", 2, [1, 2]]], node="n1"),
        Op(3, 40, 1, "invoke", "put", "va\"l\n", key="k 1"),
        Op(4, 50, 1, "info", "put", "va\"l\n", key="k 1", error="timeout"),
        Op(5, 60, "nemesis", "info", "partition", None),
        Op(6, 70, 2, "invoke", "weird f name", 1.5),
    ]
    path = tmp_path / "history.edn"
    write_edn_history(ops, path)
    assert read_edn_history(path) == ops


@pytest.mark.parametrize("text, where", [
    ("{:type :invoke, :f :read, :process 0}\n{:type :ok, :f :read, :process 0", "line 2"),
    ("{:type :invoke, :f :read, :process 0}\n{:type :done, :f :read, :process 0}", "line 2"),
    ("{:type :ok, :f :read}\n", "without :process completes no open invoke"),
    ("{:type :invoke, :f :read, :process 0, :index 4}\n"
     "{:type :ok, :f :read, :process 0, :index 4}\n", ":index 4 does not follow"),
    ("{:type :invoke, :f :read, :process \"p\"}\n", ":process"),
    ("{:type :invoke, :f :read, :process 0, :time 1.5}\n", ":time"),
    ("[{:type :invoke, :f :read, :process 0}] 5", "more than one form"),
    ("{:type :invoke, :f 3, :process 0}\n", ":f"),
])
def test_jepsen_errors_name_line(tmp_path, text, where):
    path = tmp_path / "history.edn"
    path.write_text(text)
    with pytest.raises(HistoryError) as e:
        read_edn_history(path)
    assert where in str(e.value) and str(path) in str(e.value)


def test_byte_offset_counts_utf8(tmp_path):
    path = tmp_path / "history.edn"
    path.write_text('{:type :invoke, :f :read, :process 0, :value "ééé"}\n{:x')
    with pytest.raises(HistoryError) as e:
        read_edn_history(path)
    assert e.value.offset == len('{:type :invoke, :f :read, :process 0, :value "ééé"}\n'
                                 .encode())
    assert e.value.index == 1


def test_not_utf8(tmp_path):
    path = tmp_path / "history.edn"
    path.write_bytes(b'{:type :invoke, :f :read, :process 0, :value "\xff"}')
    with pytest.raises(HistoryError, match="UTF-8"):
        read_edn_history(path)


def test_integers_beyond_msgpack_are_refused(tmp_path):
    path = tmp_path / "history.edn"
    path.write_text("{:type :invoke, :f :write, :value 123456789012345678901234N, :process 0}\n")
    with pytest.raises(HistoryError, match="64-bit"):
        read_edn_history(path)


# The fast reader (regex per token, explicit stack) and the recursive one must
# agree on every input: same value, or both refuse it.
TOKENS = st.sampled_from(["nil", "true", "x", "-", "+1", "-2.5e3", "007", "1.", "3N", ":k",
                          "::k", '"s"', '"e\\n"', '"', "[", "]", "(", ")", "{", "}", "#{",
                          "#_", "#inst", "\\c", ",", ";c\n", " ", "12abc", ":a/b", "##Inf"])


def outcome(read):
    try:
        return ("ok", read())
    except EdnError:
        return ("error",)


@settings(max_examples=500, deadline=None)
@given(st.lists(TOKENS, max_size=30), st.booleans())
def test_fast_and_recursive_readers_agree(tokens, spaced):
    text = (" " if spaced else "").join(tokens)
    fast = outcome(lambda: Parser(text).read())
    slow = outcome(lambda: Parser(text).read_or_discard_slow())
    assert fast == slow


@settings(max_examples=300, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=10)
                    | st.floats(allow_nan=False, allow_infinity=False),
                    lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(st.text(max_size=5), inner, max_size=4),
                    max_leaves=25))
def test_dumps_loads_property(value):
    assert loads(dumps(value)) == value


def test_elle_shapes_no_process_no_f_index_gaps_comments(tmp_path):
    # The shape of Elle's own examples: no :process, no :f, indices with gaps,
    # `;` comments between ops.
    path = tmp_path / "history.edn"
    path.write_text(
        "; T1 appends, T2 reads\n"
        "{:index 10 :type :invoke :value [[:append :x 1]]}\n"
        "{:index 11 :type :ok     :value [[:append :x 1]]}\n"
        "; T2\n"
        "{:index 20 :type :invoke :value [[:r :x nil]]}\n"
        "{:index 21 :type :ok     :value [[:r :x [1]]]}\n"
        "{:type :invoke, :f :read, :process 3}\n"
        "{:type :ok, :f :read, :process 3, :value 1}\n")
    ops = read_edn_history(path)
    assert [o.index for o in ops] == [10, 11, 20, 21, 22, 23]
    assert [o.f for o in ops] == ["txn"] * 4 + ["read"] * 2
    # each anonymous invoke is its own process, after the ones the file names
    assert [o.process for o in ops] == [4, 4, 5, 5, 3, 3]
    assert validate(ops) == []


# The JSON fast path (edn_fast) either declines (None) or reads what the
# general reader reads; it never decides that text is malformed.
FAST_TOKENS = st.sampled_from([
    "{", "}", "[", "]", "(", ")", "#{", ":type", ":invoke", ":k", ":a:b", ":nil", "::k",
    ":1", ":-x", ":+1", "nil", "true", "false", "null", "x", "0", "-0", "7", "-12", "00",
    "+3", "3N", "1.5", "1234567890123456789", '"s"', '"a b, [c] {d}"', '"e\\n\\"q"',
    '"\\u00e9"', '"\\ud800"', '"\\/"', '"\\a"', '"', "\\c", "#_", "#inst", ";c\n", ",", " ",
    "\n", "\u00a0", "\x01", '"\\u0002"', "{}", "[]"])


def slow_maps(text):
    parser = Parser(text)
    parser.skip_ws()
    wrapped = parser.pos < len(text) and text[parser.pos] in "[("
    forms = iter_collection(text) if wrapped else iter_forms(text)
    return [plain(f) if isinstance(f, dict) else ("not a map", f) for _, f in forms]


@settings(max_examples=1500, deadline=None)
@given(st.lists(FAST_TOKENS, max_size=40), st.booleans())
def test_fast_path_declines_or_agrees(tokens, spaced):
    text = (" " if spaced else "").join(tokens)
    fast = op_maps(text)
    if fast is None:
        return
    assert outcome(lambda: slow_maps(text)) == ("ok", fast)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.dictionaries(
    st.sampled_from(["type", "f", "value", "process", "error", "node"]),
    st.recursive(st.none() | st.booleans() | st.integers(-10**18 + 1, 10**18 - 1)
                 | st.text(st.characters(blacklist_characters="\x01"), max_size=6)
                 | st.sampled_from(["append", "r", "ok"]).map(Keyword),
                 lambda inner: st.lists(inner, max_size=4)
                 | st.dictionaries(st.text(max_size=3) | st.integers(0, 5), inner,
                                   max_size=3),
                 max_leaves=12), max_size=5), max_size=6), st.booleans())
def test_fast_path_reads_written_maps(maps, wrapped):
    # Whole op-like maps, as dumps() writes them: the fast path must take them
    # (it declines integers of more than 18 digits, and the character \x01).
    body = "\n".join(dumps(m) for m in maps)
    text = f"[{body}]" if wrapped else body
    fast = op_maps(text)
    assert fast is not None
    assert fast == slow_maps(text)


def test_fast_path_reads_elle_history(tmp_path):
    text = ('; Elle\n{:index 0 :type :invoke, :value [[:append :x 1] [:r :y nil]]}\n'
            '{:index 1 :type :ok, :value [[:append :x 1] [:r :y [1 2]]], '
            ':error {:why "a \\"b\\"", 3 [nil true]}}\n')
    assert op_maps(text) == slow_maps(text)
    assert op_maps(text)[1]["error"] == {"why": 'a "b"', 3: [None, True]}
    path = tmp_path / "h.edn"
    path.write_text(text)
    assert [o.value for o in read_edn_history(path)] == [
        [["append", "x", 1], ["r", "y", None]], [["append", "x", 1], ["r", "y", [1, 2]]]]


@settings(max_examples=300, deadline=None)
@given(st.lists(FAST_TOKENS, max_size=40), st.sampled_from([" ", "\n", " \n"]),
       st.integers(1, 12))
def test_fast_path_in_small_pieces_declines_or_agrees(tokens, sep, piece):
    # Cut into pieces of a few characters at each line's end, a text is read
    # as a whole, or declined.
    from unittest.mock import patch

    from checkers.formats import edn_fast

    text = sep.join(tokens)
    with patch.object(edn_fast, "_PIECE", piece):
        fast = op_maps(text)
    if fast is not None:
        assert outcome(lambda: slow_maps(text)) == ("ok", fast)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.dictionaries(
    st.sampled_from(["type", "f", "value", "process", "error"]),
    st.recursive(st.none() | st.integers(-5, 5) | st.text(max_size=4).filter(
                     lambda t: "\x01" not in t) | st.sampled_from(["r", "ok"]).map(Keyword),
                 lambda inner: st.lists(inner, max_size=3)
                 | st.dictionaries(st.sampled_from(["a", "b"]), inner, max_size=2),
                 max_leaves=8), max_size=4), max_size=8),
       st.booleans(), st.booleans(), st.integers(1, 60))
def test_fast_path_pieces_read_every_layout(maps, wrapped, multiline, piece):
    # One map per line, or maps written over several lines (a cut inside one
    # must not lose or split it), wrapped in a vector or not: any piece size
    # reads what one piece reads, which is what the general reader reads.
    from unittest.mock import patch

    from checkers.formats import edn_fast

    lines = [dumps(m).replace(", ", ",\n ") if multiline else dumps(m) for m in maps]
    body = "\n".join(lines)
    text = f"[{body}]" if wrapped else body
    whole = op_maps(text)
    assert whole is not None and whole == slow_maps(text)
    with patch.object(edn_fast, "_PIECE", piece):
        assert op_maps(text) == whole


def test_fast_path_reads_a_map_across_a_cut():
    from unittest.mock import patch

    from checkers.formats import edn_fast

    text = '{:a 1,\n :b "x\ny"}\n{:a 2, :b [1\n 2]}\n{:a 3}\n'
    with patch.object(edn_fast, "_PIECE", 3):
        assert op_maps(text) == [{"a": 1, "b": "x\ny"}, {"a": 2, "b": [1, 2]}, {"a": 3}]


@pytest.mark.parametrize("text", [
    "{:a 1 :a 2}", "{:a}", "{[1] 2}", "{:a [1 2}]", "{:a 1.5}", "{:a 12345678901234567890}",
    "{:a (1)}", '{:a "\\ud800"}', "{:a #{1}}", "{:a x}", "{:a 1}}", "{:a 1", "[{:a 1}] {}",
    "{:a ##Inf}", "{:a \\c}", "{:a 1N}", '{:a "x\x01"}', "{:a :\u00e9}", "{:a\u00a01}"])
def test_fast_path_declines(text):
    assert op_maps(text) is None


@pytest.mark.parametrize("text", ['{:a "x;y"}', '{:a "x;y"} ; c\n{:b 1}', '{:a "\u00e9;"}'])
def test_fast_path_semicolons_in_strings(text):
    assert op_maps(text) is not None
    assert op_maps(text) == slow_maps(text)


# --- (mutants that survived) --------------------------------------------------------


def test_names_that_read_as_other_values_are_written_as_strings():
    from checkers.formats.edn import keyword_or_string
    assert [keyword_or_string(n) for n in ("ok", "nil", "true", "false")] == [
        ":ok", '"nil"', '"true"', '"false"']
    assert [loads(keyword_or_string(n)) for n in ("nil", "true", "false")] == [
        "nil", "true", "false"]


def test_an_unclosed_string_is_named_at_its_start():
    with pytest.raises(EdnError, match=r"^at character 3: string is never closed$"):
        loads('[1 "abc')


def test_an_unknown_format_is_named_at_byte_zero(tmp_path):
    path = tmp_path / "history.bin"
    path.write_bytes(b"\x01\x02\x03")
    with pytest.raises(HistoryError, match="unknown history format") as e:
        detect_format(path)
    assert e.value.offset == 0


@pytest.mark.parametrize("opener,closer", [("[", "]"), ("{:a ", "}"), ("#{", "}"), ("(", ")")])
def test_nesting_up_to_the_depth_limit_parses_and_one_more_is_refused(opener, closer):
    assert loads(opener * 100 + "1" + closer * 100) is not None
    with pytest.raises(EdnError, match=r"nested deeper than 100 levels$") as e:
        loads(opener * 101 + "1" + closer * 101)
    # At the 101st opener (a set's error points just past its "#{").
    assert e.value.offset in (100 * len(opener), 101 * len(opener))


# (A map is left out: an empty map cannot hold another as its only form.)
@pytest.mark.parametrize("opener,closer", [("[", "]"), ("#{", "}"), ("(", ")")])
def test_both_readers_put_the_depth_limit_at_the_same_empty_collection(opener, closer):
    # An empty innermost collection has no items whose depth is checked: the
    # recursive reader once let it through one level past the fast path's limit.
    def both(levels: int) -> list[tuple]:
        text = opener * levels + closer * levels
        return [outcome(lambda: Parser(text, 0, 5).read()),
                outcome(lambda: Parser(text, 0, 5).read_or_discard_slow())]
    assert [r[0] for r in both(5)] == ["ok", "ok"]
    assert both(6) == [("error",), ("error",)]


def test_a_directory_cannot_be_opened_as_a_history(tmp_path):
    with pytest.raises(HistoryError, match=r"not a regular file \(a directory\)$") as e:
        read_any(tmp_path)
    assert str(tmp_path) in str(e.value)


def test_each_tag_counts_one_nesting_level():
    # Three tags on a scalar: levels 0, 1 and 2; a fourth is one too many.
    assert loads("#a #b #c 1", max_depth=2) == 1
    with pytest.raises(EdnError, match="nested deeper than 2 levels"):
        loads("#a #b #c #d 1", max_depth=2)


@pytest.mark.parametrize("text, value", [
    (r"\space", " "), (r"\newline", "\n"), (r"\u00e9", "é"), (r"\x", "x"), (r"\\", "\\")])
def test_characters_named_coded_and_plain(text, value):
    assert loads(text) == value


@pytest.mark.parametrize("text", [r"\bogus", r"\u12", r"\ab"])
def test_a_character_name_that_is_none_of_those_is_refused_where_it_ends(text):
    with pytest.raises(EdnError) as e:
        loads(text)
    assert e.value.offset == 2 and "after a token" in e.value.reason


def test_a_map_or_set_used_as_a_map_key_becomes_its_edn_text():
    # Map keys must be strings or scalars in plain values: a composite key is
    # written back as EDN. A map key used to crash the reader (TypeError).
    assert plain(loads("{{1 2} 3}")) == {"{1 2}": 3}
    assert plain(loads("{{:a [1 2]} 5}")) == {"{:a [1 2]}": 5}
    assert plain(loads("{#{1 2} 6, #{} 8}")) == {"#{1 2}": 6, "#{}": 8}
    assert plain(loads("{[1 {2 3}] 7}")) == {"[1 {2 3}]": 7}


def test_each_discard_counts_one_nesting_level():
    assert loads("#_ #_ #_ 1 2 3 4", max_depth=2) == 4
    with pytest.raises(EdnError, match="nested deeper than 2 levels"):
        loads("#_ #_ #_ #_ 1 2 3 4 5", max_depth=2)


def test_characters_inside_a_collection():
    assert loads(r"[1 \a \space \u00e9]") == [1, "a", " ", "é"]


@pytest.mark.parametrize("text, offset", [("#{", 0), ("[1 #{", 3)])
def test_a_set_cut_off_after_its_opening_is_never_closed(text, offset):
    with pytest.raises(EdnError) as e:
        loads(text)
    assert (e.value.offset, e.value.reason) == (offset, "collection is never closed with '}'")


def test_jepsen_history_form_that_is_not_a_map_is_named(tmp_path):
    path = tmp_path / "history.edn"
    path.write_text("{:type :invoke, :f :read, :process 0}\n[:ok :read]\n")
    with pytest.raises(HistoryError) as e:
        read_edn_history(path)
    assert e.value.reason == "line 2: an op must be a map"


def test_an_empty_or_unsniffable_edn_file_is_known_by_its_name(tmp_path):
    # Neither empty text nor text opening with a comment shows its format:
    # the .edn suffix decides (else an empty file would be read as msgpack).
    for name, text in (("empty.edn", ""), ("comment.EDN", "; a history\n")):
        path = tmp_path / name
        path.write_text(text)
        assert detect_format(path) == "edn", name
    path = tmp_path / "empty.bin"
    path.write_text("")
    assert detect_format(path) == "msgpack"


def test_loads_refuses_a_second_form_where_it_starts():
    with pytest.raises(EdnError) as e:
        loads("1 2")
    assert (e.value.offset, e.value.reason) == (2, "more than one form")


def test_an_unknown_symbolic_value_is_named():
    with pytest.raises(EdnError) as e:
        loads("##")
    assert (e.value.offset, e.value.reason) == (0, "unknown symbolic value ##")
    with pytest.raises(EdnError, match="unknown symbolic value ##Foo"):
        loads("##Foo")


def test_op_index_bound_is_msgpacks_largest_unsigned_integer(tmp_path):
    # An op's :index is written back as msgpack: 2**64 - 1 is the largest it
    # holds, and is kept; one more is refused, naming the field.
    from checkers.formats.jepsen import MAX_INT, op_from_edn
    assert MAX_INT == 2**64 - 1
    path = tmp_path / "history.edn"
    path.write_text(f"{{:type :invoke, :f :read, :process 0, :index {MAX_INT}}}\n")
    assert read_edn_history(path)[0].index == MAX_INT
    m = {"type": "invoke", "f": "read", "process": 0}
    assert op_from_edn({**m, "index": MAX_INT}, 0).index == MAX_INT
    with pytest.raises(ValueError, match="field :index must be a non-negative integer"):
        op_from_edn({**m, "index": MAX_INT + 1}, 0)
    path.write_text(f"{{:type :invoke, :f :read, :process 0, :index {MAX_INT + 1}}}\n")
    with pytest.raises(HistoryError, match=":index must be a non-negative integer"):
        read_edn_history(path)


def test_false_inside_a_form_the_recursive_reader_takes_is_false():
    # Sets (and anything after a tag or an escape) go through the recursive
    # reader: its words must mean what the fast path's do.
    assert loads("#{false}") == frozenset([False])
    assert loads("#{nil true}") == frozenset([None, True])
    assert Parser("false").read_or_discard_slow() is False
    assert loads("#{falsey}") == frozenset([Symbol("falsey")])


def test_nan_is_written_as_edn_spells_it():
    assert dumps(float("nan")) == "##NaN"
    with pytest.raises(EdnError, match="not a finite number"):
        loads(dumps(float("nan")))


def test_a_second_form_after_the_collection_is_named_where_it_starts():
    with pytest.raises(EdnError) as e:
        list(iter_collection("[1] [2]"))
    assert (e.value.offset, e.value.reason) == (4, "more than one form")


def test_an_unknown_string_escape_is_named_at_its_backslash():
    with pytest.raises(EdnError) as e:
        loads('"ab\\qc"')
    assert e.value.offset == 3 and e.value.reason == "unknown string escape \\q"


def test_nesting_read_by_the_recursive_reader_counts_toward_max_depth():
    # Inside a set every form goes through the recursive reader; inside
    # vectors the fast path hands the set over at the depth it reached.
    assert loads("#{#{#{1}}}", max_depth=5) == frozenset([frozenset([frozenset([1])])])
    with pytest.raises(EdnError, match="nested deeper than 5 levels"):
        loads("#{" + "[" * 20 + "]" * 20 + "}", max_depth=5)
    assert loads("[" * 4 + "#{1}" + "]" * 4, max_depth=5) == [[[[frozenset([1])]]]]
    with pytest.raises(EdnError, match="nested deeper than 5 levels"):
        loads("[" * 5 + "#{1}" + "]" * 5, max_depth=5)


def test_fast_op_maps_read_a_bracket_written_apart_from_its_first_element():
    text = "{:type :invoke, :f :write, :value [ 1 2], :process 0}\n"
    maps = op_maps(text)
    assert maps is not None and maps[0]["value"] == [1, 2]


def test_fast_op_maps_count_an_enclosing_vector_as_one_level():
    def deepest(wrap):
        for n in range(1, 80):
            m = "{:type :invoke, :f :read, :process 0, :value " + "[" * n + "]" * n + "}"
            if op_maps(wrap(m)) is None:
                return n - 1
        return None
    plain_ = deepest(lambda m: m)
    assert plain_ is not None and plain_ > 10
    assert deepest(lambda m: f"[{m}]") == plain_ - 1


def test_an_empty_log_file_is_an_etcd_porcupine_log(tmp_path):
    (tmp_path / "h.log").write_bytes(b"")
    (tmp_path / "h.msgpack").write_bytes(b"")
    assert detect_format(tmp_path / "h.log") == "porcupine-etcd"
    assert detect_format(tmp_path / "h.msgpack") == "msgpack"
