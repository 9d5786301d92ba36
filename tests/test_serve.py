"""flows.serve reads a cron in a named time zone (UTC unless told) and rejects an unknown zone up front."""

import pytest


def test_unknown_time_zone_is_refused_before_anything_is_served(monkeypatch, capsys):
    from flows import serve

    served = []
    monkeypatch.setattr(serve.pipeline, "serve", lambda **kw: served.append(kw))
    monkeypatch.setattr("sys.argv", ["serve", "--cron", "0 3 * * *", "--timezone", "Mars/Olympus"])
    with pytest.raises(SystemExit) as e:
        serve.main()
    assert e.value.code == 2 and not served
    assert "--timezone 'Mars/Olympus': not an IANA time zone" in capsys.readouterr().err
    monkeypatch.setattr("sys.argv", ["serve", "--cron", "0 3 * * *"])
    serve.main()
    assert served[0]["schedule"].cron == "0 3 * * *" and served[0]["schedule"].timezone == "UTC"
