"""The selector's boundary with Inductor's private API (torch 2.11 and 2.13), one module per
Inductor surface it touches:

- `torch_release`: the supported torch releases, and what a release cannot run;
- `choice_candidates`: Inductor's choices (KernelTemplateChoices, ChoiceCallers) -> `Candidate`;
- `enumeration`: kselect's own enumeration of a GEMM's template candidates, and picking the
  kept ones out of Inductor's generators;
- `template_configs`: the InductorChoices handlers (filtering, selecting) that see template
  configs before code generation;
- `inductor_settings`: installing a choices handler, the GEMM search space, multi-kernel hints;
- `autotune`: select_algorithm's preprocessing and feedback callbacks, ATen's graph timing;
- `signatures`: Inductor's input nodes -> a `Problem` and its cache-key fields;
- `current_graph`: the graph being lowered (its GEMMs; the current GEMM's epilogue);
- `multi_template`: Inductor's deferred choice on GPUs (the multi-template buffer) and the
  scheduler's pick after its epilogue-fusion benchmark;
- `compile_pool`, `dynamo_callbacks`, `lookup_table`: Inductor's compile workers, Dynamo's compile
  start, Inductor's template lookup table.
"""
