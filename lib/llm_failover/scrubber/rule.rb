# frozen_string_literal: true

module LlmFailover
  class Scrubber
    # One kind of sensitive value: a name (the placeholder's kind, "card" gives
    # [CARD_1]) and what finds it, a Regexp or a callable.
    #
    # A Regexp rule replaces every match, or only its group named value when it has
    # one, so the context it needs stays: /Bearer (?<value>\S+)/. A callable rule is given the
    # text and returns the sensitive substrings it found; each occurrence is replaced.
    #
    # @example
    #   Scrubber::Rule.new("employee_id", /\bEMP-\d{6}\b/)
    #   Scrubber::Rule.new("customer", ->(text) { text.scan(/Customer: (\w+ \w+)/).flatten })
    class Rule
      NAME = /\A[A-Za-z][A-Za-z0-9_]*\z/.freeze
      private_constant :NAME

      # @return [String] the kind, lower case: "card", "employee_id"
      attr_reader :name
      # @return [Regexp, #call]
      attr_reader :pattern
      # @api private: the kind of the C pre-scan (Scrubber::Prescan) that finds every
      #   place where a match may start (built-in rules: a 1 MB prompt is too long for
      #   one regexp pass per rule)
      attr_reader :prescan
      # @api private: literal strings one of which every match starts with (the text
      #   is searched for them, and the pattern tried only where they are)
      attr_reader :starts
      # @api private: a callable given a match's text, false to let it pass (Luhn, mod 97)
      attr_reader :check
      # @api private: the pattern matched only at the position it is given (\G), for
      #   a rule with +prescan+ or +starts+
      attr_reader :anchored
      # @api private: 0 or "value", the part of a match that is replaced
      attr_reader :group

      # @param name [String, Symbol] letters, digits and _; the placeholder is its upper case
      # @param pattern [Regexp, #call]
      # @raise [ConfigurationError]
      def initialize(name, pattern, check: nil, prescan: nil, starts: nil)
        name = name.to_s
        raise ConfigurationError, "a scrubber rule's name must match #{NAME.source}, got #{name.inspect}" unless NAME.match?(name)
        unless pattern.is_a?(Regexp) || pattern.respond_to?(:call)
          raise ConfigurationError, "scrubber rule #{name}: the pattern must be a Regexp or respond to #call, got #{pattern.class}"
        end

        @name = name.downcase.freeze
        @pattern = pattern
        @group = pattern.is_a?(Regexp) && pattern.names.include?("value") ? "value" : 0
        @check = check
        @prescan = prescan
        @starts = starts
        @anchored = Regexp.new("\\G(?:#{pattern.source})", pattern.options) if (prescan || starts) && pattern.is_a?(Regexp)
        freeze
      end

      # @api private: a rule from what Scrubber.new(rules:) accepts: a Rule,
      # [name, pattern] or { name:, pattern: }.
      def self.from(value)
        case value
        when Rule then value
        when Array then new(*value)
        when Hash then new(value.fetch(:name) { value.fetch("name") }, value.fetch(:pattern) { value.fetch("pattern") })
        else raise ConfigurationError, "a scrubber rule is a Scrubber::Rule, [name, pattern] or { name:, pattern: }, got #{value.class}"
        end
      rescue KeyError => e
        raise ConfigurationError, "scrubber rule #{value.inspect} lacks #{e.key.inspect}"
      end

      # @api private: +text+ with every value this rule finds replaced through +table+
      # (the path of rules without +prescan+ or +starts+, custom ones).
      def replace(text, table)
        if @pattern.is_a?(Regexp)
          text.gsub(@pattern) do |whole|
            m = Regexp.last_match
            value = m[@group]
            next whole if value.nil? || value.empty? || (@check && !@check.call(value))

            from = m.begin(@group) - m.begin(0)
            "#{whole[0, from]}#{table.placeholder(@name, value)}#{whole[(from + value.length)..]}"
          end
        else
          values = Array(@pattern.call(text)).select { |v| v.is_a?(String) && !v.empty? }.uniq
          return text if values.empty?

          text.gsub(Regexp.union(values.sort_by { |v| -v.length })) { |v| table.placeholder(@name, v) }
        end
      end

      def inspect
        "#<#{self.class.name} #{@name}>"
      end
    end
  end
end
