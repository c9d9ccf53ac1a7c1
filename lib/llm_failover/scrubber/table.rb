# frozen_string_literal: true

module LlmFailover
  class Scrubber
    # The placeholders of one text: the same value always gets the same placeholder,
    # numbered per kind in order of appearance ([CARD_1], [CARD_2], [EMAIL_1]).
    class Table
      # @return [Hash{String => String}] placeholder => original value
      attr_reader :mapping

      def initialize
        @mapping = {}
        @by_value = {}
        @counts = Hash.new(0)
      end

      # @return [String] the placeholder of +value+ of kind +name+
      def placeholder(name, value)
        (@by_value[name] ||= {})[value] ||= begin
          n = (@counts[name] += 1)
          placeholder = "[#{name.upcase}_#{n}]"
          @mapping[placeholder] = value
          placeholder
        end
      end
    end
  end
end
