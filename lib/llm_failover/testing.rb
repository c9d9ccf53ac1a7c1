# frozen_string_literal: true

# Test helpers for apps that use llm_failover. Pure Ruby (stdlib only): loading this file
# does not load the compiled extension.
require_relative "testing/fake_provider"
