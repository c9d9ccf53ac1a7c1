# frozen_string_literal: true

# test/test_helper.rb of a Rails app, as `rails new` writes it, with the llm_failover lines
# (doc/rails.md, "Testing the app").
ENV["RAILS_ENV"] ||= "test"
require_relative "../config/environment"
require "rails/test_help"
require "llm_failover/testing"

LlmFailover::Testing.minitest!
