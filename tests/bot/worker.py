"""A consumer as the tests run it, in a process of its own: python -m tests.bot.worker SETTINGS_JSON POOL.

SETTINGS_JSON: reviewer.bot.queue.Settings' fields; the tests' stage (stagefns.touch) is registered as
"touch". huey polls an idle queue every 0.2 s at most, not 10 s."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from reviewer.bot import queue, stages
from tests.bot.stagefns import touch

stages.register("touch", touch)
fields = json.loads(sys.argv[1])
queue.consume(queue.Settings(home=Path(fields.pop("home")), **fields), sys.argv[2], max_delay=0.2)
