# frozen_string_literal: true

module LlmFailover
  class Scrubber
    # Restores placeholders in a streamed answer. A placeholder may arrive split
    # across deltas ("[CA" then "RD_1] ends"): the end of a delta that could still
    # become a placeholder is held back until the next delta settles it, and given
    # out by #flush when the answer ends or is reset.
    #
    # @api private: one per streamed call, built by Call
    class StreamRestorer
      def initialize(session, json: false)
        @session = session
        @json = json
        @keys = session.mapping.keys
        @longest = @keys.map(&:length).max.to_i
        @starts = @keys.map { |k| k[0] }.uniq
        @held = +""
      end

      # @param texts [Array<String>] deltas in order
      # @return [Array<String>] the restored text that can be shown now, without empty strings
      def feed(texts)
        out = []
        texts.each do |text|
          text = @held.empty? ? text : @held + text
          keep = held_length(text)
          if keep.zero?
            @held = +""
          else
            @held = text[-keep..]
            text = text[0, text.length - keep]
          end
          out << @session.restore(text, json: @json) unless text.empty?
        end
        out
      end

      # @return [String] what was held back ("" when nothing was)
      def flush
        held = @held
        @held = +""
        held.empty? ? held : @session.restore(held, json: @json)
      end

      private

      # The length of the longest end of +text+ that is the start of a placeholder
      # but not a whole one.
      def held_length(text)
        n = text.length
        from = n - @longest + 1
        from = 0 if from.negative?
        (from...n).each do |i|
          next unless @starts.include?(text[i])

          tail = text[i..]
          return n - i if @keys.any? { |k| k.length > tail.length && k.start_with?(tail) }
        end
        0
      end
    end
  end
end
