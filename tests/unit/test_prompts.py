import pytest

from briefroom.prompts import PromptError, load_template, render


def test_render_fills_placeholders():
    assert render("Hi {{ name }}, {{x}}!", name="A", x=1) == "Hi A, 1!"


def test_missing_variable_is_an_error():
    with pytest.raises(PromptError, match="without a value: name"):
        render("Hi {{name}}")


def test_unused_value_is_an_error():
    with pytest.raises(PromptError, match="no placeholder: extra"):
        render("Hi", extra=1)


@pytest.mark.parametrize("name", ["planner.md", "searcher.md", "critic.md", "writer.md"])
def test_shipped_prompts_render_with_the_data_notice(name):
    text = render(load_template(name), data_notice="NOTICE")
    assert "NOTICE" in text and "{{" not in text


def test_unknown_prompt_file():
    with pytest.raises(PromptError, match="no shipped prompt"):
        load_template("nope.md")
