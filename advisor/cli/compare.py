"""`advisor compare PROFILE --samples 1.28M --epochs 90`: best CPU, GPU, TPU and accelerator side by side."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from advisor.cli.common import (
    CatalogOpt,
    CheckpointEvery,
    EvalShare,
    FormatOpt,
    LoaderWorkers,
    ProfileArg,
    WideOpt,
)
from advisor.cli.recommend import (
    Budget,
    Deadline,
    Epochs,
    GlobalBatch,
    MaxDevices,
    Objective,
    Precision,
    Pricing,
    Providers,
    Samples,
    Steps,
    Tokens,
    build_question,
    check_outputs,
)  # fmt: skip
from advisor.render.output import Format, emit


def register(app: typer.Typer) -> None:
    @app.command("compare")
    def compare_cmd(
        profile: ProfileArg,
        samples: Samples = None,
        epochs: Epochs = None,
        steps: Steps = None,
        tokens: Tokens = None,
        deadline: Deadline = None,
        budget: Budget = None,
        objective: Objective = None,
        providers: Providers = None,
        max_devices: MaxDevices = 512,
        pricing: Pricing = "on-demand",
        precision: Precision = None,
        global_batch: GlobalBatch = None,
        checkpoint_every: CheckpointEvery = None,
        eval_share: EvalShare = None,
        loader_workers: LoaderWorkers = None,
        plot: Annotated[
            Path | None,
            typer.Option(help="Draw time and cost of each kind's best option side by side (PNG; needs matplotlib)."),
        ] = None,
        catalog: CatalogOpt = None,
        fmt: FormatOpt = Format.table,
        wide: WideOpt = False,
    ) -> None:
        """The best CPU, GPU, TPU and other-accelerator option for PROFILE side by side, in hours and dollars:
        do I need a GPU for this?"""
        check_outputs(profile, catalog, plot=plot)
        cat, prof, workload, constraints = build_question(
            profile, samples, epochs, steps, tokens, deadline, budget, objective, providers, None,
            max_devices, pricing, precision, global_batch, catalog, checkpoint_every, eval_share, loader_workers,
        )  # fmt: skip
        from advisor.recommender.compare import compare
        from advisor.render.recommend_tables import print_comparison

        result = compare(prof, cat, workload, constraints)
        if plot is not None:
            from advisor.cli.common import note
            from advisor.render.plots import comparison_png

            comparison_png(result, plot)
            note(f"comparison plot written to {plot}")
        emit(result, fmt, lambda: print_comparison(result, wide))
