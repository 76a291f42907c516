"""scripts/flags_page: docs/FLAGS.md is what the config classes say today."""

from __future__ import annotations

from scripts import flags_page


def test_the_committed_flags_page_is_current():
    with open(flags_page.PAGE, encoding="utf-8") as handle:
        assert handle.read() == flags_page.page(), (
            "docs/FLAGS.md is out of date: run python -m scripts.flags_page"
        )


def test_the_page_lists_every_preset_and_every_field():
    from abc_tf.runs import experiments

    text = flags_page.page()
    for name, preset in experiments.presets().items():
        assert f"| `{name}` |" in text
        for part_name, part in preset.parts().items():
            for field in experiments.settable_fields(type(part), part_name):
                assert f"`--{part_name}.{field}`" in text
