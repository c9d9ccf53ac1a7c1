# frozen_string_literal: true

# Test helpers for apps that use llm_failover. Pure Ruby (stdlib only): loading this file
# does not load the compiled extension (LlmFailover::Testing.isolate loads the gem when a
# test first runs).
require_relative "testing/fake_provider"
require_relative "testing/isolation"
require_relative "testing/offline"
