#!/usr/bin/env python3
"""Checks the board profiles: valid TOML, only known sections and keys, values of the right kind.

Run by `make test`. Until hushd loads profiles itself (`hushd check-config`), this is what keeps them honest;
the schema below is the one docs/configuration.md will document. Prints one line per profile and a summary.
"""
import pathlib
import sys
import tomllib

GPIO_INPUT = {"kind": str, "chip": str, "line": (int, str), "active_low": bool, "bias": str, "debounce_ms": int}
EVDEV_INPUT = {"kind": str, "device": str, "code": str, "codes": list, "grab": bool}
ALSA_INPUT = {"kind": str, "card": str, "control": str, "interface": str, "index": int}
SCHEMA = {
    "board": {"name": str, "description": str},
    "output": {"pcm": str, "rate": int, "channels": int, "format": str, "period_frames": int, "periods": int},
}
ROUTE = {"pcm": str, "rate": int, "channels": int, "format": str, "switches": list}
INPUT_KINDS = {"gpio": GPIO_INPUT, "evdev": EVDEV_INPUT, "alsa": ALSA_INPUT}
INPUT_NAMES = {"silence_switch", "volume_up", "volume_down", "headphone_jack", "headphone_switch",
               "headphone_sense", "media_keys"}
BIASES = {"as-is", "disabled", "pull-up", "pull-down"}
FORMATS = {"S16_LE", "S24_3LE", "S32_LE", "FLOAT_LE"}


def check_table(table, schema, where, problems):
    for key, value in table.items():
        if key not in schema:
            problems.append(f"{where}: unknown key '{key}' (known: {', '.join(sorted(schema))})")
        elif not isinstance(value, schema[key]):
            problems.append(f"{where}.{key}: expected {schema[key]}, found {type(value).__name__} {value!r}")


def check(path):
    problems = []
    try:
        profile = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as error:
        return [f"not valid TOML: {error}"]
    for section in profile:
        if section not in {"board", "output", "routes", "inputs", "outputs"}:
            problems.append(f"unknown section [{section}]")
    for section, schema in SCHEMA.items():
        if section not in profile:
            problems.append(f"missing section [{section}]")
        else:
            check_table(profile[section], schema, section, problems)
    if profile.get("board", {}).get("name") != path.stem:
        problems.append(f"board.name must be the file's name, '{path.stem}'")
    if profile.get("output", {}).get("format", "S16_LE") not in FORMATS:
        problems.append(f"output.format must be one of {sorted(FORMATS)}")
    routes = profile.get("routes", {})
    if "speaker" not in routes:
        problems.append("a [routes.speaker] is required")
    for name, route in routes.items():
        check_table(route, ROUTE, f"routes.{name}", problems)
    for name, spec in profile.get("inputs", {}).items():
        if name not in INPUT_NAMES:
            problems.append(f"inputs.{name}: unknown input (known: {', '.join(sorted(INPUT_NAMES))})")
        kind = spec.get("kind")
        if kind not in INPUT_KINDS:
            problems.append(f"inputs.{name}.kind must be gpio, evdev or alsa, not {kind!r}")
            continue
        check_table(spec, INPUT_KINDS[kind], f"inputs.{name}", problems)
        if kind == "gpio" and spec.get("bias", "as-is") not in BIASES:
            problems.append(f"inputs.{name}.bias must be one of {sorted(BIASES)}")
    for name, spec in profile.get("outputs", {}).items():
        check_table(spec, {"kind": str, "chip": str, "line": (int, str), "active_low": bool}, f"outputs.{name}",
                    problems)
    return problems


def main():
    here = pathlib.Path(__file__).parent
    passed = failed = 0
    for path in sorted(here.glob("*.toml")):
        problems = check(path)
        if problems:
            failed += 1
            print(f"FAIL {path.name}")
            for problem in problems:
                print(f"    {path.name}: {problem}")
        else:
            passed += 1
            print(f"PASS {path.name}")
    print(f"profiles: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
