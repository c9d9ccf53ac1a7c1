# frozen_string_literal: true

# Tool calling: a Tool's description and schema, the checks before a call runs, the
# record of a call. The loop that drives them lives with the chat.
require "llm_failover/errors"
require "llm_failover/tools/tool"
require "llm_failover/tools/tool_call"
require "llm_failover/tools/argument_check"
require "llm_failover/tools/toolbox"
require "llm_failover/tools/runner"
