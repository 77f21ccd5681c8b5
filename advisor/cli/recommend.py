"""`advisor recommend PROFILE --tokens 10B --deadline 3d`: the cheapest (or fastest) configuration, ranked.

"Nothing qualifies" is an answer, not an error: the explanation is printed and the exit code is 0 (the
JSON/YAML output has `qualifying: 0` and an `explanation`). Bad input exits 2 with one line, before any
work and before any file is written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from advisor.cli import complete
from advisor.cli.common import (
    CatalogOpt,
    CheckpointEvery,
    EvalShare,
    FormatOpt,
    LoaderWorkers,
    ProfileArg,
    WideOpt,
    check_files,
    note,
    parse_run_options,
)
from advisor.errors import UserError
from advisor.render.output import Format, emit

WORKLOAD_HELP = "Dataset size in samples ('1.28M'), with --epochs."


def split_list(value: str | None) -> list[str]:
    return [part.strip() for part in (value or "").split(",") if part.strip()]


def build_question(
    prof_name: str,
    samples: str | None,
    epochs: float | None,
    steps: str | None,
    tokens: str | None,
    deadline: str | None,
    budget: str | None,
    objective: str | None,
    providers: str | None,
    devices: str | None,
    max_devices: int,
    pricing: str,
    precision: str | None,
    global_batch: int | None,
    catalog_paths,
    checkpoint_every: str | None = None,
    eval_share: float | None = None,
    loader_workers: int | None = None,
):
    """Parse and check everything the user typed: (catalog, profile, workload, constraints). Raises UserError."""
    from advisor import api, units
    from advisor.cli.estimate import parse_workload
    from advisor.estimator.config import Workload
    from advisor.recommender.candidates import resolve_devices, resolve_precisions, resolve_providers
    from advisor.recommender.model import Constraints
    from advisor.vocab import check_choice

    deadline_s = None if deadline is None else units.parse_positive(deadline, "duration", "--deadline")
    budget_usd = None if budget is None else units.parse_positive(budget, "money", "--budget")
    check_choice(objective, ("cost", "time"), "--objective")
    check_choice(pricing, ("on-demand", "spot", "both"), "--pricing")
    if max_devices < 1:
        raise UserError(f"--max-devices must be at least 1, got {max_devices}")
    if global_batch is not None and global_batch < 1:
        raise UserError(f"--global-batch must be at least 1, got {global_batch}")
    run = parse_run_options(checkpoint_every, eval_share, loader_workers)
    work = parse_workload(samples, epochs, steps, tokens)
    workload = Workload(samples=work[0], epochs=work[1], steps=work[2], tokens=work[3])
    if workload.empty():
        raise UserError(
            "recommend needs a workload: how much training", "give --samples N --epochs E, --steps S or --tokens T"
        )
    precisions = resolve_precisions(split_list(precision))
    cat = api.catalog(catalog_paths)
    prov = resolve_providers(cat, split_list(providers))
    dev_terms = split_list(devices)
    dev_ids = resolve_devices(cat, dev_terms)
    prof = api.profile_from(prof_name)
    if objective is None:
        objective = "time" if budget_usd is not None and deadline_s is None else "cost"
    constraints = Constraints(
        deadline_s=deadline_s,
        budget_usd=budget_usd,
        objective=objective,
        providers=prov,
        devices=dev_ids,
        device_filter=dev_terms,
        max_devices=max_devices,
        pricing=pricing,
        precisions=precisions,
        global_batch=global_batch,
        checkpoint_every_s=run.checkpoint_every_s,
        eval_share=run.eval_share,
        loader_workers=run.loader_workers,
    )
    return cat, prof, workload, constraints


def check_outputs(profile: str, catalog, **paths: Path | None) -> None:
    """Before any work: the outputs can be written and none is an input (the profile, a catalog overlay)."""
    from advisor import api

    check_files(
        {f"--{what}": path for what, path in paths.items()}, {"the profile": api.find_profile(profile)}, catalog
    )
    if paths.get("plot") is not None:
        from advisor.render.plots import require_matplotlib

        require_matplotlib()


Samples = Annotated[str | None, typer.Option(help=WORKLOAD_HELP)]
Epochs = Annotated[float | None, typer.Option(help="Passes over --samples.")]
Steps = Annotated[str | None, typer.Option(help="Optimizer steps.")]
Tokens = Annotated[str | None, typer.Option(help="Training tokens ('10B'); needs a token model.")]
Deadline = Annotated[str | None, typer.Option(help="Finish within this long: '90m', '36h', '3d', '1w'.")]
Budget = Annotated[str | None, typer.Option(help="Spend at most this much: '500', '$1.5k'.")]
Objective = Annotated[
    str | None,
    typer.Option(help="cost or time: what to minimize (default: cost, or time with only a --budget)."),
]
Providers = Annotated[
    str | None,
    typer.Option(help="Only these providers, comma separated: aws,gcp,lambda.", autocompletion=complete.provider_list),
]
Devices = Annotated[
    str | None,
    typer.Option(
        help="Only these devices or kinds, comma separated: h100,a100 or gpu,tpu.",
        autocompletion=complete.device_or_kind_list,
    ),
]
MaxDevices = Annotated[int, typer.Option(help="At most this many devices in all (nodes × per node).")]
Pricing = Annotated[str, typer.Option(help="on-demand, spot or both.")]
Precision = Annotated[
    str | None,
    typer.Option(help="Precisions to consider, comma separated (default: fp32, tf32, and bf16-mixed or fp16-mixed)."),
]
GlobalBatch = Annotated[
    int | None,
    typer.Option(
        help="Samples per optimizer step over all devices (default: the model file's GLOBAL_BATCH, else the "
        "profiled batch)."
    ),
]


def register(app: typer.Typer) -> None:
    @app.command("recommend")
    def recommend_cmd(
        profile: ProfileArg,
        samples: Samples = None,
        epochs: Epochs = None,
        steps: Steps = None,
        tokens: Tokens = None,
        deadline: Deadline = None,
        budget: Budget = None,
        objective: Objective = None,
        providers: Providers = None,
        devices: Devices = None,
        max_devices: MaxDevices = 512,
        pricing: Pricing = "on-demand",
        precision: Precision = None,
        global_batch: GlobalBatch = None,
        top: Annotated[int, typer.Option(help="How many ranked options to show.")] = 10,
        export: Annotated[Path | None, typer.Option(help="Write the question and the answer as YAML.")] = None,
        skypilot: Annotated[Path | None, typer.Option(help="Write a SkyPilot task YAML for the winner.")] = None,
        plot: Annotated[Path | None, typer.Option(help="Draw the time-cost plane (PNG; needs matplotlib).")] = None,
        checkpoint_every: CheckpointEvery = None,
        eval_share: EvalShare = None,
        loader_workers: LoaderWorkers = None,
        catalog: CatalogOpt = None,
        fmt: FormatOpt = Format.table,
        wide: WideOpt = False,
    ) -> None:
        """Rank every catalog configuration for training PROFILE: cheapest within a deadline, fastest within a
        budget, the Pareto front of time and cost; when nothing qualifies, why and what to relax."""
        if top < 1:
            raise UserError(f"--top must be at least 1, got {top}")
        check_outputs(profile, catalog, export=export, skypilot=skypilot, plot=plot)
        cat, prof, workload, constraints = build_question(
            profile, samples, epochs, steps, tokens, deadline, budget, objective, providers, devices,
            max_devices, pricing, precision, global_batch, catalog, checkpoint_every, eval_share, loader_workers,
        )  # fmt: skip
        from advisor.recommender.rank import recommend

        rec = recommend(prof, cat, workload, constraints, top=top)
        write_outputs(rec, prof, cat, export, skypilot, plot)
        from advisor.render.recommend_tables import print_recommendation

        emit(rec, fmt, lambda: print_recommendation(rec, wide))


def write_outputs(rec, prof, cat, export: Path | None, skypilot: Path | None, plot: Path | None) -> None:
    if export is not None:
        from advisor.render.export import write_export

        write_export(rec, export)
        note(f"recommendation written to {export}")
    if skypilot is not None:
        if not rec.options:
            note(f"no qualifying option, so no SkyPilot task was written to {skypilot}")
        else:
            from advisor.render.skypilot import write_task

            try:
                write_task(rec.options[0], prof, cat.devices[rec.options[0].device], skypilot)
                note(f"SkyPilot task for rank 1 written to {skypilot} (launch: sky launch {skypilot})")
            except UserError as exc:  # SkyPilot cannot launch the winner: say why, write nothing
                note(exc.line())
    if plot is not None:
        from advisor.render.plots import pareto_png

        pareto_png(rec, plot)
        note(f"Pareto plot written to {plot}")
