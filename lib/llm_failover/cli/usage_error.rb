# frozen_string_literal: true

module LlmFailover
  class CLI
    # A mistake in the command line: one line on stderr, exit 2. hint: false when the
    # message already says what to do.
    class UsageError < StandardError
      def initialize(message, hint: true)
        super(message)
        @hint = hint
      end

      def hint?
        @hint
      end
    end
  end
end
