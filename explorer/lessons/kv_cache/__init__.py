"""Generating with a KV cache: the lesson's manifest, its controls (drawn by ``page.py``) and the states its tests
visit."""

from explorer.lessons.kv_cache import model
from explorer.shell import controls, i18n, llm
from explorer.shell.controls import Choice, NumberInput, Options, Slider, Toggle
from explorer.shell.i18n import N_, translator

_, _n = translator(__name__)

POSITIONS = model.MAX_PROMPT_TOKENS + model.MAX_STEPS  # the longest sequence the page shows
SIZES = {"n_kv_heads": 3, "group_size": 3, "n_heads": 9}  # SmolLM2-135M's: the key/value head's example context


def listed(values) -> str:
    """``"0, 1 or 2"``: what a link may give a control with these values (in the run's language)."""
    values = [str(v) for v in values]
    return values[0] if len(values) == 1 else _("{first} or {last}").format(first=", ".join(values[:-1]),
                                                                            last=values[-1])


def group(ctx) -> list[int]:
    """The query heads that read key/value head ``ctx["kv_head"]``, by the model's own numbers."""
    return [ctx["kv_head"] * ctx["group_size"] + j for j in range(ctx["group_size"])]


def group_captions(ctx) -> list[str]:
    """The key/value head choice's captions: the query heads each one serves (``query head 3`` when it serves one)."""
    g = ctx["group_size"]
    if g == 1:
        return [_("query head {h}").format(h=h) for h in range(ctx["n_kv_heads"])]
    return [_("query heads {first}–{last}").format(first=k * g, last=(k + 1) * g - 1) for k in range(ctx["n_kv_heads"])]


def sharing_help(ctx) -> str:
    """The key/value head choice's help: grouped-query, multi-query or multi-head attention, as the model has."""
    facts = dict(heads=ctx["n_heads"], kv=ctx["n_kv_heads"], g=ctx["group_size"])
    if ctx["group_size"] == 1:
        return _("Multi-head attention: each of the {heads} query heads has its own key/value head (query head h "
                 "reads key/value head h).").format(**facts)
    if ctx["n_kv_heads"] == 1:
        return _("Multi-query attention: all {heads} query heads read the one key/value head.").format(**facts)
    return _("Grouped-query attention: {heads} query heads share {kv} key/value heads; query head h reads key/value "
             "head h // {g}.").format(**facts)


CONTROLS = controls.declare(
    __name__,
    prompt=llm.prompt_box(
        "kv_prompt", N_("Prompt"), model.DEFAULT_PROMPT, height=80,
        help=lambda ctx: _("Read by the model's own tokenizer (byte-level BPE). The first {prompt} tokens are used: "
                           "with up to {steps} generated tokens that is at most {positions} positions, where every "
                           "heat map keeps one readable row per token. Special tokens written out, such as "
                           "`<|im_start|>` and `<|im_end|>`, become their single token. Press Ctrl+Enter (⌘+Enter) to "
                           "apply.").format(prompt=model.MAX_PROMPT_TOKENS, steps=model.MAX_STEPS,
                                            positions=POSITIONS)),
    sampling=Options(  # the link holds the code (greedy, sample) in every language
        key="kv_sampling", label=N_("Choose the next token by"), options=model.METHOD_LABELS,
        default=model.DEFAULTS["method"], horizontal=True, captions=[N_("the most likely token"), N_("a random draw")],
        help=N_("greedy: always the token with the largest logit. sample: draw from softmax(logits / T), among the "
                "top-k tokens; the sidebar's seed makes the draws repeatable.")),
    temperature=Options(  # the link holds 2.0 and 0.8 in every language; the slider shows 0,8 in pt/tr
        key="kv_temperature", label=N_("Temperature T"), widget="select_slider",
        options=lambda ctx: {str(t): i18n.number(t, 1) for t in model.TEMPERATURES},
        default=str(model.DEFAULTS["temperature"]),
        help=N_("Sampling draws from softmax(logits / T): below 1 sharper (closer to greedy), above 1 flatter.")),
    top_k=NumberInput(
        key="kv_top_k", label=N_("Top-k (0 = no cut)"), lo=0, hi=lambda ctx: ctx["vocab"],
        default=model.DEFAULTS["top_k"], example={"vocab": 49152},
        help=lambda ctx: _("Draw only among the k most likely tokens; 0 keeps the whole vocabulary ({vocab} "
                           "tokens).").format(vocab=i18n.integer(ctx["vocab"]))),
    steps=Slider(key="kv_steps", label=N_("Generated tokens read back with the cache (steps)"), lo=0,
                 hi=model.MAX_STEPS, default=model.DEFAULTS["steps"],
                 help=N_("0: the prompt has been read (the prefill) and the first token chosen. Each step reads the "
                         "chosen token through the model with the cache and chooses the next one.")),
    layer=Slider(key="kv_layer", label=N_("Layer"), lo=0, hi=lambda ctx: ctx["n_layers"] - 1,
                 default=lambda ctx: min(model.DEFAULTS["layer"], ctx["n_layers"] - 1), example={"n_layers": 30},
                 help=lambda ctx: _("Every one of the {n} layers has its own cache.").format(n=ctx["n_layers"])),
    kv_head=Choice(
        key="kv_head", label=N_("Key/value head"), options=lambda ctx: list(range(ctx["n_kv_heads"])), default=0,
        widget="radio", horizontal=True, example=SIZES,
        captions=group_captions, expected=lambda ctx: listed(range(ctx["n_kv_heads"])), help=sharing_help),
    query=Choice(  # the model's number of the query head compared
        key="kv_query", label=N_("Query head compared below"), options=group, default=lambda ctx: group(ctx)[0],
        widget="radio", horizontal=True, example={"kv_head": 0, "group_size": 3},
        expected=lambda ctx: _("{values} (a query head of key/value head {kv})").format(values=listed(group(ctx)),
                                                                                       kv=ctx["kv_head"]),
        help=lambda ctx: _("The query heads that read key/value head {kv}, by the model's own numbers. Switching "
                           "the key/value head keeps the head's place in its group.").format(kv=ctx["kv_head"])),
    compare=Toggle(  # the full recomputation: one more forward pass, run when switched on (issue 47), in the link
        key="kv_compare", label=lambda ctx: _("Compare with a full recomputation: 1 forward pass of {n} tokens, {time} "
                                              "on this server").format(**ctx),
        example={"n": 17, "time": "under a second"}),
)
STATES = ()
