"""Traffic between the generations: the weight model (:mod:`.weights`), provider settings
(:mod:`.settings`), HAProxy's weight scale and config (:mod:`.haproxy`) and its runtime API
(:mod:`.runtime`). Pure except :mod:`.runtime`, which talks to a running HAProxy."""
