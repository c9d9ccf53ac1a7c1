# frozen_string_literal: true

require_relative "lib/llm_failover/version"

Gem::Specification.new do |spec|
  spec.name = "llm_failover"
  spec.version = LlmFailover::VERSION
  spec.summary = "LLM chat calls with honest retries and one-level provider failover, on a libcurl C core"
  spec.description = "Calls OpenAI-compatible and Anthropic chat APIs through a C core (libcurl, json-c), " \
                     "classifies every failure, retries where that helps, fails over once to a backup, " \
                     "and records every attempt."
  spec.authors = ["llm_failover authors"]
  spec.license = "MIT"
  # The oldest Ruby CI tests (Debian 12's 3.1; Debian 13's 3.3 too). The system
  # libraries' minimums (libcurl 7.88.1, json-c 0.16) are checked by extconf.rb.
  spec.required_ruby_version = ">= 3.1"

  spec.files = Dir["lib/**/*.{rb,rake,tt,css}", "ext/**/*.{c,h,rb}", "exe/*", "README.md", "doc/**/*.md", "LICENSE"]
  spec.bindir = "exe"
  spec.executables = ["llm_failover"]
  spec.extensions = ["ext/llm_failover/extconf.rb"]
  spec.require_paths = ["lib"]
end
