"""The settings table (native/core/settings.def) as Python reads it: mpirep.Config,
the order in which a setting's sources win, and the table of docs/configuration.md, which must
list exactly what the settings table says."""

import json
import re
from pathlib import Path

import pytest

from mpirep._settings_table import SETTINGS, SWITCH, negated_flag
from mpirep.settings import Config

CONFIGURATION_DOC = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"


def doc_row(setting):
    variables = ", ".join(f"`{v}`" for v in ("MPIREP_" + setting.environment, setting.horovod_variable) if v)
    default = json.dumps(setting.default) if setting.type is str else str(setting.default)
    if setting.flag_unit == SWITCH:
        flag = f"`{setting.flag}` (1), `{negated_flag(setting)}` (0)"
    else:
        flag = f"`{setting.flag}` ({setting.flag_unit})" if setting.flag_unit else (f"`{setting.flag}`" if setting.flag else "")
    return f"| `{setting.name}` | {variables} | {default} | {flag} | {setting.meaning} |"


def test_the_configuration_doc_lists_the_settings_table():
    rows = [line for line in CONFIGURATION_DOC.read_text().splitlines()
            if re.match(r"\| `[a-z_]+` \| `MPIREP_", line)]
    expected = [doc_row(s) for s in SETTINGS]
    assert rows == expected, "docs/configuration.md's rows should read:\n" + "\n".join(expected)


def test_defaults_types_and_text_for_the_core():
    config = Config.load(environ={})
    for setting in SETTINGS:
        value = getattr(config, setting.name)
        assert type(value) is setting.type and value == setting.default
    text = Config.load(environ={}, cycle_time_ms=0.1, timeline="/tmp/t.json").as_text()
    assert float(text["cycle_time_ms"]) == 0.1 and text["timeline"] == "/tmp/t.json"
    assert text["fusion_threshold"] == str(Config().fusion_threshold)


def test_init_argument_then_mpirep_then_horovod_variable_then_default():
    environ = {"MPIREP_FUSION_THRESHOLD": "4096", "HOROVOD_FUSION_THRESHOLD": "8192",
               "HOROVOD_CYCLE_TIME": "2.5", "MPIREP_CHUNK_BYTES": "1e5"}
    config = Config.load(environ=environ, timeline="x.json")
    assert config.fusion_threshold == 4096
    assert config.cycle_time_ms == 2.5
    assert config.chunk_bytes == 100000
    assert config.timeline == "x.json"
    assert Config.load(environ=environ, fusion_threshold=1).fusion_threshold == 1
    assert Config.load(environ={"HOROVOD_CHUNK_BYTES": "128"}).chunk_bytes == Config().chunk_bytes  # no Horovod name


@pytest.mark.parametrize("value,expected", [("1", 1), ("0", 0), ("-1", -1)])
def test_horovod_hierarchical_allreduce_variable(value, expected):
    assert Config.load(environ={"HOROVOD_HIERARCHICAL_ALLREDUCE": value}).hierarchical_allreduce == expected
    assert Config.load(environ={}).hierarchical_allreduce == -1  # auto
    with pytest.raises(ValueError, match="hierarchical_allreduce must be at least -1"):
        Config.load(environ={"MPIREP_HIERARCHICAL_ALLREDUCE": "-2"})


@pytest.mark.parametrize("text,value", [("1", True), ("true", True), ("Yes", True), ("on", True),
                                        ("0", False), ("false", False), ("no", False), ("", False)])
def test_bool_settings_read_words_and_reach_the_core_as_0_or_1(text, value):
    config = Config.load(environ={"HOROVOD_TIMELINE_MARK_CYCLES": text})
    assert config.timeline_mark_cycles is value
    assert config.as_text()["timeline_mark_cycles"] == ("1" if value else "0")


def test_bool_settings_refuse_other_words():
    with pytest.raises(ValueError, match="mpirep setting timeline_mark_cycles: cannot read 'maybe' as bool"):
        Config.load(environ={"MPIREP_TIMELINE_MARK_CYCLES": "maybe"})
    assert Config.load(environ={}, timeline_mark_cycles=True).timeline_mark_cycles is True


@pytest.mark.parametrize("variable", ["MPIREP_STALL_CHECK_DISABLE", "HOROVOD_STALL_CHECK_DISABLE"])
def test_stall_check_disable(variable):
    assert Config.load(environ={variable: "1"}).stall_check_time_seconds == 0
    assert Config.load(environ={variable: "0"}).stall_check_time_seconds == Config().stall_check_time_seconds


def test_bad_settings_are_refused_by_name():
    with pytest.raises(TypeError, match="unknown mpirep setting.*fusion_thresold"):
        Config.load(environ={}, fusion_thresold=1)
    with pytest.raises(ValueError, match="mpirep setting chunk_bytes must be at least 64"):
        Config.load(environ={}, chunk_bytes=63)
    with pytest.raises(ValueError, match="mpirep setting cycle_time_ms: cannot read 'soon' as float"):
        Config.load(environ={"MPIREP_CYCLE_TIME": "soon"})
