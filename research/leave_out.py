"""Make or check the committed decontamination list `kgrag/leave_out.json`: the records of
the knowledge sources that repeat an evaluation question (MedQuAD's corpus repeats 480
`medquad_dev300` questions), by line, with the sha256 of the file they were found in.

    python research/leave_out.py            # check: exit 1 if the list is out of date
    python research/leave_out.py --write    # remake it from the data folder's files

This script reads the evaluation files (to find the repeats); a graph build reads only
the list it writes.
"""

from __future__ import annotations

import json
from typing import Annotated

import typer

from kgrag.config import Settings
from kgrag.leave_out import LIST
from kgrag.script import run_script
from textrag.corpora import leave_out_listing


def main(write: Annotated[bool, typer.Option("--write", help="Rewrite the list.")] = False
         ) -> None:
    wanted = leave_out_listing(Settings().data_dir)
    text = json.dumps(wanted, indent=1) + "\n"
    counts = {rel: len(v["records"]) for rel, v in wanted["files"].items()}  # type: ignore[attr-defined]
    if write:
        LIST.write_text(text, encoding="utf-8")
        print(f"wrote {LIST}: {counts}")
    elif not LIST.is_file() or LIST.read_text(encoding="utf-8") != text:
        print(f"{LIST} is out of date ({counts} expected): python research/leave_out.py --write")
        raise typer.Exit(1)
    else:
        print(f"{LIST} is up to date: {counts}")


if __name__ == "__main__":
    run_script(main, __doc__)
