"""SFT on messages data: our ChatML template with `{% generation %}` markers makes TRL's `assistant_only_loss`
train exactly the assistant tokens (content + `<|im_end|>`), rendered as the model's own template renders."""

from __future__ import annotations

import pytest

pytest.importorskip("trl")

MESSAGES = [{"role": "user", "content": "Capital of France?"},
            {"role": "assistant", "content": "I search. <q>France capital</q>"},
            {"role": "tool", "content": "<r>Paris is the capital.</r>"},
            {"role": "assistant", "content": "So \\boxed{Paris}"}]


def runs(ids, mask):
    """Contiguous runs of ids where mask is 1."""
    out, cur = [], []
    for i, m in zip(ids, mask):
        if m:
            cur.append(i)
        elif cur:
            out.append(cur)
            cur = []
    return out + ([cur] if cur else [])


def test_template_renders_as_the_model_and_leaves_the_tokenizer_alone(tokenizer):
    from train.chat_template import default_system, training_tokenizer

    own = tokenizer.chat_template
    tok = training_tokenizer(tokenizer)
    assert tokenizer.chat_template == own and "{% generation %}" in tok.chat_template
    assert default_system(tokenizer).startswith("You are a helpful AI assistant named SmolLM")
    for msgs in (MESSAGES, [{"role": "system", "content": "Be brief."}, *MESSAGES]):
        for gen in (False, True):
            assert tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=gen) == \
                tokenizer.apply_chat_template(msgs, tokenize=False, add_generation_prompt=gen)
    assert training_tokenizer(tok) is tok  # already marked: used as it is


def test_assistant_only_loss_trains_exactly_the_assistant_tokens(tmp_path, tokenizer):
    import torch

    from tests.train.trainers.conftest import tiny_model
    from train.sft import SFTSettings, build_sft_trainer

    settings = SFTSettings(out=str(tmp_path), max_steps=1, learning_rate=1e-2)
    model = tiny_model(tokenizer)
    trainer = build_sft_trainer(model, tokenizer, [{"messages": MESSAGES}], settings, kind="messages",
                                output_dir=str(tmp_path / "t"))
    row = trainer.train_dataset[0]
    batch = trainer.data_collator([row])
    ids, labels = batch["input_ids"][0].tolist(), batch["labels"][0].tolist()
    trained = runs(ids, [int(x != -100) for x in labels])
    assert [tokenizer.decode(r) for r in trained] == [m["content"] + "<|im_end|>" for m in MESSAGES
                                                      if m["role"] == "assistant"]
    assert [x for x in labels if x != -100] == [i for r in trained for i in r]  # labels are the ids themselves
    assert tokenizer.decode(ids) == tokenizer.apply_chat_template(MESSAGES, tokenize=False)
    before = [p.detach().clone() for p in model.parameters()]
    trainer.train()
    assert any(not torch.equal(a, p) for a, p in zip(before, trainer.model.parameters()))
