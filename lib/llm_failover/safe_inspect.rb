# frozen_string_literal: true

module LlmFailover
  # For a class whose own #inspect leaves out what must not be shown (API keys, header
  # values, scrubbed text, the engine's target Hash): to_s and pp show that #inspect
  # too, not Ruby's defaults, which list every instance variable (and Struct's
  # pretty_print every member).
  module SafeInspect
    # @return [String] #inspect
    def to_s
      inspect
    end

    def pretty_print(pp)
      pp.text(inspect)
    end
  end
end
