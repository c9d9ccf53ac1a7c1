# frozen_string_literal: true

require "json"
require_relative "../errors"
require_relative "../chat/text"
require_relative "../safe_inspect"

module LlmFailover
  class Scrubber
    # The scrubbing of one call: every message and the instructions go through the
    # configured scrubber, and the placeholders of all of them form one mapping, so
    # the same value is the same placeholder in every message of the call and one
    # placeholder never means two values (a scrubber that numbers each text from 1,
    # as any #scrub(text) -> [text, mapping] may, is renumbered here).
    #
    # @api private: built by Chat for a call when a scrubber is configured
    class Session
      include SafeInspect

      PLACEHOLDER_NUMBER = /_(\d+)\]\z/.freeze
      private_constant :PLACEHOLDER_NUMBER

      # @return [Hash{String => String}] placeholder => original value
      attr_reader :mapping

      # @param scrubber [#scrub]
      def initialize(scrubber)
        @scrubber = scrubber
        @mapping = {}
        @by_value = {}
        @last_number = Hash.new(0) # "[CARD" => highest n used
      end

      # @return [String] +text+ as it may leave the process
      def scrub(text)
        out, mapping = @scrubber.scrub(text)
        unless out.is_a?(String) && mapping.respond_to?(:each_pair)
          raise ConfigurationError, "#{@scrubber.class}#scrub must return [String, Hash], got #{out.class} and #{mapping.class}"
        end

        renames = nil
        mapping.each_pair do |placeholder, value|
          placeholder = bracketed(placeholder)
          value = original(value)
          final = @by_value[value] || (@mapping.key?(placeholder) ? next_placeholder(placeholder) : placeholder)
          (renames ||= {})[placeholder] = final unless final == placeholder
          adopt(final, value)
        end
        @restore = nil
        renames ? out.gsub(Regexp.union(renames.keys), renames) : out
      end

      # @return [Hash{String => Integer}] how many values of each kind were replaced,
      #   e.g. {"card" => 1}; never the values
      def counts
        @counts ||= @mapping.each_key.each_with_object(Hash.new(0)) { |placeholder, h| h[kind(placeholder)] += 1 }
                            .to_h.freeze
      end

      # Whether an answer may hold placeholders to restore.
      def restoring?
        !@mapping.empty?
      end

      # @param json [Boolean] +text+ is a JSON answer: a placeholder stands inside a JSON
      #   string there, so its value goes back escaped (a quote, a backslash or a
      #   newline in a PEM key must not break the object)
      # @return [String] +text+ with every placeholder of this call back to its value
      def restore(text, json: false)
        return text if @mapping.empty? || text.nil?

        text.gsub(@restore ||= Regexp.union(@mapping.keys.sort_by { |p| -p.length }),
                  json ? json_mapping : @mapping)
      end

      # @param json [Boolean] see #restore
      # @return [StreamRestorer] for the chunks of one streamed answer
      def stream(json: false)
        StreamRestorer.new(self, json: json)
      end

      # Counts only: the values are what must not be shown.
      def inspect
        "#<#{self.class.name} scrubbed=#{counts.inspect}>"
      end

      private

      # A mapping's value as UTF-8 text: it goes back into the answer, which is text,
      # after the call (a binary String would fail there, with the answer paid for).
      def original(value)
        Text.utf8(value.to_s, "a value #{@scrubber.class}#scrub replaced")
      rescue ArgumentError => e
        raise ConfigurationError, e.message
      end

      # placeholder => the value as the inside of a JSON string
      def json_mapping
        @json_mapping ||= @mapping.transform_values { |value| JSON.generate(value)[1...-1] }
      end

      def adopt(placeholder, value)
        @json_mapping = nil
        @mapping[placeholder] = value
        @by_value[value] ||= placeholder
        number = placeholder[PLACEHOLDER_NUMBER, 1]
        stem = number ? placeholder.delete_suffix("_#{number}]") : placeholder
        @last_number[stem] = [@last_number[stem], number.to_i].max
        @counts = nil
      end

      # The next free placeholder of +placeholder+'s kind: [CARD_1] taken gives [CARD_2].
      def next_placeholder(placeholder)
        number = placeholder[PLACEHOLDER_NUMBER, 1]
        stem = number ? placeholder.delete_suffix("_#{number}]") : placeholder.delete_suffix("]")
        candidate = nil
        n = @last_number[stem]
        candidate = "#{stem}_#{n += 1}]" while candidate.nil? || @mapping.key?(candidate)
        candidate
      end

      # top_secret's mapping keys are EMAIL_1, its text says [EMAIL_1].
      def bracketed(placeholder)
        placeholder = placeholder.to_s
        placeholder.start_with?("[") ? placeholder : "[#{placeholder}]"
      end

      # "[CREDIT_CARD_2]" => "credit_card"
      def kind(placeholder)
        placeholder.delete_prefix("[").delete_suffix("]").sub(/_\d+\z/, "").downcase
      end
    end
  end
end
