#!/usr/bin/env python3
"""A stand-in for ``apptainer exec`` (apptainer is not installable here): checks the arguments
against apptainer's documented CLI, records them, and runs the command as apptainer would, with only
the ``--env`` variables (``--cleanenv``) in the ``--pwd`` folder. The image must exist as a file."""

import json
import os
import sys

DOCUMENTED = {"--nv": 0, "--cleanenv": 0, "--contain": 0, "--env": 1, "--bind": 1, "--pwd": 1}


def main() -> int:
    args = sys.argv[1:]
    with open(os.environ["APPTAINER_STANDIN_LOG"], "a") as log:
        log.write(json.dumps(args) + "\n")
    if not args or args[0] != "exec":
        print("apptainer stand-in: only `exec` is known", file=sys.stderr)
        return 255
    i, env, cwd, binds = 1, {}, os.getcwd(), []
    while args[i].startswith("-"):
        flag = args[i]
        if flag not in DOCUMENTED:
            print(f"FATAL:   unknown flag: {flag}", file=sys.stderr)
            return 255
        value = args[i + 1] if DOCUMENTED[flag] else None
        if flag == "--env":
            key, _, val = value.partition("=")
            env[key] = val
        elif flag == "--pwd":
            cwd = value
        elif flag == "--bind":
            src, _, dst = value.partition(":")
            if src != dst or not os.path.isdir(src):
                print(f"FATAL:   bind {value}: not a folder at the same path", file=sys.stderr)
                return 255
            binds.append(src)
        i += 1 + DOCUMENTED[flag]
    image, command = args[i], args[i + 1:]
    if not os.path.isfile(image):
        print(f"FATAL:   could not open image {image}", file=sys.stderr)
        return 255
    os.chdir(cwd)
    env.setdefault("PATH", os.path.dirname(sys.executable) + ":/usr/bin:/bin")
    command[0] = sys.executable if command[0] == "python3" else command[0]  # the "image's" python3
    os.execve(command[0], command, env)


if __name__ == "__main__":
    sys.exit(main())
