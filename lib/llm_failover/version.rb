# frozen_string_literal: true

module LlmFailover
  VERSION = "0.1.0"
end
