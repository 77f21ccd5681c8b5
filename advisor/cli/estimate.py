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
    LoaderWorkers,
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

PRECISION_HELP = (
    "fp32, tf32, bf16-mixed, fp16-mixed, bf16 or fp8-mixed (the blocks' matmuls on FP8 tensor units; "
    "default: the profile's)."
)


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
            str | None,
            typer.Option(
                help="How the data-parallel replicas shard: single, ddp, zero1, zero2 or fsdp (ZeRO-3); "
                "default ddp when there are replicas."
            ),
        ] = None,
        tp: Annotated[int, typer.Option("--tp", help="Tensor-parallel degree (divides the attention heads).")] = 1,
        pp: Annotated[int, typer.Option("--pp", help="Pipeline stages (at most the repeated blocks).")] = 1,
        vpp: Annotated[int, typer.Option("--vpp", help="Interleaved model chunks per pipeline stage.")] = 1,
        cp: Annotated[int, typer.Option("--cp", help="Context-parallel degree (divides the sequence).")] = 1,
        sequence_parallel: Annotated[
            bool | None,
            typer.Option(
                "--sequence-parallel/--no-sequence-parallel",
                help="Split norms and residuals by tp too (default: on whenever --tp > 1).",
            ),
        ] = None,
        recompute: Annotated[
            str | None, typer.Option(help="Activation recomputation: none, selective (attention core) or full.")
        ] = None,
        checkpointing: Annotated[
            bool, typer.Option("--checkpointing/--no-checkpointing", help="The same as --recompute full.")
        ] = False,
        micro_batch: Annotated[
            int | None, typer.Option(help="Micro-batch per data-parallel replica (default: the largest that fits).")
        ] = None,
        global_batch: Annotated[int | None, typer.Option(help="Samples per optimizer step over all replicas.")] = None,
        kernels: Annotated[
            str,
            typer.Option(
                help="eager (PyTorch as the profile ran it), fused (a framework's fused kernels: Megatron, NeMo, "
                "Transformer Engine) or auto (fused for models of 1B parameters or more and under fp8-mixed)."
            ),
        ] = "auto",
        search: Annotated[
            bool,
            typer.Option("--search", help="Rank every valid layout of these devices and show the best in full."),
        ] = False,
        top: Annotated[int, typer.Option(help="With --search: how many layouts to list.")] = 10,
        samples: Annotated[str | None, typer.Option(help="Dataset size in samples ('1.28M'), with --epochs.")] = None,
        epochs: Annotated[float | None, typer.Option(help="Passes over --samples.")] = None,
        steps: Annotated[str | None, typer.Option(help="Optimizer steps.")] = None,
        tokens: Annotated[str | None, typer.Option(help="Training tokens ('10B'); needs a token model.")] = None,
        pricing: Annotated[str, typer.Option(help="on-demand or spot.")] = "on-demand",
        checkpoint_every: CheckpointEvery = None,
        eval_share: EvalShare = None,
        loader_workers: LoaderWorkers = None,
        catalog: CatalogOpt = None,
        plot: PlotOpt = None,
        fmt: FormatOpt = Format.table,
    ) -> None:
        """Estimate step time, memory per device, total time and cost of training on one configuration: its
        parallel layout (tp × pp × cp × dp) and the step's split into compute, exposed communication per
        dimension, pipeline bubble and recomputation."""
        from advisor import api
        from advisor.vocab import KERNELS, PRECISIONS, RECOMPUTES, STRATEGIES

        check_choice(precision, PRECISIONS, "--precision")
        check_choice(strategy, STRATEGIES, "--strategy")
        check_choice(recompute, RECOMPUTES, "--recompute")
        check_choice(pricing, ("on-demand", "spot"), "--pricing")
        check_choice(kernels, KERNELS, "--kernels")
        for value, option in ((micro_batch, "--micro-batch"), (global_batch, "--global-batch"), (count, "--count")):
            if value is not None and value < 1:
                raise UserError(f"{option} must be at least 1, got {value}")
        if top < 1:
            raise UserError(f"--top must be at least 1, got {top}")
        work = parse_workload(samples, epochs, steps, tokens)
        run = parse_run_options(checkpoint_every, eval_share, loader_workers)
        check_files({"--plot": plot}, {"the profile": api.find_profile(profile)}, catalog)
        check_plot(plot)
        cat = api.catalog(catalog)
        prof = api.profile_from(profile)
        if search:
            result = api.search(
                prof, hardware, count=count, nodes=nodes, precision=precision, global_batch=global_batch, top=top,
                cat=cat,
            )  # fmt: skip
            from advisor.render.estimate_tables import print_search

            emit(result, fmt, lambda: print_search(result, prof.name))
            return
        est = api.estimate(
            prof,
            hardware,
            count=count,
            nodes=nodes,
            precision=precision,
            strategy=strategy,
            checkpointing=checkpointing,
            tp=tp,
            pp=pp,
            vpp=vpp,
            cp=cp,
            sequence_parallel=sequence_parallel,
            recompute=recompute,
            micro_batch=micro_batch,
            global_batch=global_batch,
            samples=work[0],
            epochs=work[1],
            steps=work[2],
            tokens=work[3],
            spot=pricing == "spot",
            cat=cat,
            run=run,
            kernels=kernels,
        )
        from advisor.render.estimate_tables import estimate_view, print_estimate

        if plot is not None:
            plot_roofline(plot, prof, cat.devices[est.device], cat, est.config.precision, est.micro_batch)
        emit(estimate_view(est), fmt, lambda: print_estimate(est, prof.name))
        if not est.fits:
            raise SystemExit(EXIT_DOES_NOT_FIT)
