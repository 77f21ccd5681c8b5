"""`advisor estimate PROFILE --hardware NAME …`: step time, memory fit, total time and cost."""

from __future__ import annotations

import math
from typing import Annotated

import typer

from advisor.cli import complete
from advisor.cli.common import (
    EXIT_DOES_NOT_FIT,
    CatalogOpt,
    CheckpointEvery,
    EvalShare,
    FormatOpt,
    PlotOpt,
    ProfileArg,
    check_files,
    check_plot,
    parse_run_options,
    plot_roofline,
)
from advisor.errors import UserError
from advisor.render.output import Format, emit
from advisor.vocab import check_choice

PRECISION_HELP = "fp32, tf32, bf16-mixed, fp16-mixed or bf16 (default: the profile's)."


def parse_workload(samples: str | None, epochs: float | None, steps: str | None, tokens: str | None):
    from advisor import units

    def count(value: str | None, what: str) -> float | None:
        return None if value is None else units.parse_positive(value, "count", what)

    if epochs is not None and not (math.isfinite(epochs) and epochs > 0):
        raise UserError(f"--epochs must be a positive number, got {epochs:g}", "e.g. --epochs 90")
    return count(samples, "--samples"), epochs, count(steps, "--steps"), count(tokens, "--tokens")


def register(app: typer.Typer) -> None:
    @app.command("estimate")
    def estimate_cmd(
        profile: ProfileArg,
        hardware: Annotated[
            str,
            typer.Option(
                "--hardware",
                "-H",
                help="A device ('h100') or an instance ('p5.48xlarge').",
                autocompletion=complete.hardware,
            ),
        ],
        count: Annotated[
            int | None, typer.Option(help="Devices per node (default: all of the instance's; 1 for a device).")
        ] = None,
        nodes: Annotated[int, typer.Option(help="Nodes (instances) joined over their network.")] = 1,
        precision: Annotated[str | None, typer.Option(help=PRECISION_HELP)] = None,
        strategy: Annotated[
            str | None, typer.Option(help="single, ddp or fsdp (default: ddp when there are several devices).")
        ] = None,
        checkpointing: Annotated[
            bool, typer.Option("--checkpointing/--no-checkpointing", help="Activation checkpointing.")
        ] = False,
        micro_batch: Annotated[
            int | None, typer.Option(help="Per-device micro-batch (default: the largest that fits).")
        ] = None,
        global_batch: Annotated[int | None, typer.Option(help="Samples per optimizer step over all devices.")] = None,
        samples: Annotated[str | None, typer.Option(help="Dataset size in samples ('1.28M'), with --epochs.")] = None,
        epochs: Annotated[float | None, typer.Option(help="Passes over --samples.")] = None,
        steps: Annotated[str | None, typer.Option(help="Optimizer steps.")] = None,
        tokens: Annotated[str | None, typer.Option(help="Training tokens ('10B'); needs a token model.")] = None,
        pricing: Annotated[str, typer.Option(help="on-demand or spot.")] = "on-demand",
        checkpoint_every: CheckpointEvery = None,
        eval_share: EvalShare = None,
        catalog: CatalogOpt = None,
        plot: PlotOpt = None,
        fmt: FormatOpt = Format.table,
    ) -> None:
        """Estimate step time, memory per device, total time and cost of training on one configuration."""
        from advisor import api
        from advisor.vocab import PRECISIONS, STRATEGIES

        check_choice(precision, PRECISIONS, "--precision")
        check_choice(strategy, STRATEGIES, "--strategy")
        check_choice(pricing, ("on-demand", "spot"), "--pricing")
        for value, option in ((micro_batch, "--micro-batch"), (global_batch, "--global-batch"), (count, "--count")):
            if value is not None and value < 1:
                raise UserError(f"{option} must be at least 1, got {value}")
        work = parse_workload(samples, epochs, steps, tokens)
        run = parse_run_options(checkpoint_every, eval_share)
        check_files({"--plot": plot}, {"the profile": api.find_profile(profile)}, catalog)
        check_plot(plot)
        cat = api.catalog(catalog)
        prof = api.profile_from(profile)
        est = api.estimate(
            prof,
            hardware,
            count=count,
            nodes=nodes,
            precision=precision,
            strategy=strategy,
            checkpointing=checkpointing,
            micro_batch=micro_batch,
            global_batch=global_batch,
            samples=work[0],
            epochs=work[1],
            steps=work[2],
            tokens=work[3],
            spot=pricing == "spot",
            cat=cat,
            run=run,
        )
        from advisor.render.estimate_tables import estimate_view, print_estimate

        if plot is not None:
            plot_roofline(plot, prof, cat.devices[est.device], cat, est.config.precision, est.micro_batch)
        emit(estimate_view(est), fmt, lambda: print_estimate(est, prof.name))
        if not est.fits:
            raise SystemExit(EXIT_DOES_NOT_FIT)
