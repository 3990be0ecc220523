"""The soak report's charts script: bundled once, then read from the project's cache (the report of a real run, looked
at in headless Chromium: e2e/test_report.py)."""

from __future__ import annotations

from kafka_soak.evidence import report


def test_the_charts_script_is_made_once_and_then_read_from_the_cache(tmp_path, monkeypatch):
    """vl-convert bundles Vega-Embed in about a second of CPU per report: the first report of a machine makes it into
    the project's cache, every later one reads it from there."""
    import vl_convert

    monkeypatch.setenv("SOAK_CACHE_DIR", str(tmp_path))
    made = report.vega_embed_bundle.__wrapped__()
    [cached] = (tmp_path / "vega-embed").glob("*.js")
    assert cached.read_text() == made and "vegaEmbed" in made

    def no_second_bundle(**_kwargs):
        raise AssertionError("bundled again instead of read from the cache")

    monkeypatch.setattr(vl_convert, "javascript_bundle", no_second_bundle)
    assert report.vega_embed_bundle.__wrapped__() == made
