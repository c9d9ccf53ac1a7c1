# frozen_string_literal: true

require_relative "../errors"
require "llm_failover/llm_failover" # the compiled extension
require_relative "rule"
require_relative "checks"
require_relative "table"
require_relative "rules"
require_relative "session"
require_relative "stream_restorer"

module LlmFailover
  # Replaces sensitive values in a text with placeholders ([CARD_1], [API_KEY_1]) before
  # it leaves the process. Any object with the same #scrub can take its place as
  # c.scrubber (see Scrubber::Session for how a call uses it).
  #
  # @example
  #   LlmFailover.configure { |c| c.scrubber = LlmFailover::Scrubber.default(email: true) }
  #   LlmFailover::Scrubber.default.scrub("card 4111 1111 1111 1111")
  #   # => ["card [CARD_1]", { "[CARD_1]" => "4111 1111 1111 1111" }]
  class Scrubber
    # The default rules (API keys and tokens, payment cards, US SSNs, IBANs), with
    # e-mail addresses and phone numbers when asked for, then +rules+.
    # @return [Scrubber]
    def self.default(email: false, phone: false, rules: [])
      new(rules: Rules::DEFAULT + (email ? [Rules::EMAIL] : []) + (phone ? [Rules::PHONE] : []) + rules)
    end

    # @param rules [Array<Rule, Array(String, Regexp), Hash>] exactly the rules used
    # @raise [ConfigurationError] a rule that is none of these
    def initialize(rules:)
      raise ConfigurationError, "rules must be an Array, got #{rules.class}" unless rules.is_a?(Array)

      @rules = rules.map { |r| Rule.from(r) }.freeze
      # Rules by their place in @rules (two finding the same span: the first names
      # it), each once.
      once = @rules.each_index.select { |i| @rules.index(@rules[i]) == i }
      @prescanned = once.select { |i| @rules[i].prescan }.group_by { |i| @rules[i].prescan }
      @kinds = @prescanned.keys.sum { |kind| 1 << kind }
      @literal = once.select { |i| @rules[i].starts }
      @custom = @rules.reject { |r| r.prescan || r.starts }
      freeze
    end

    # @return [Array<Rule>]
    attr_reader :rules

    # @param text [String]
    # @return [Array(String, Hash{String => String})] the text with placeholders, and
    #   each placeholder's original value
    def scrub(text)
      bin = text.b
      found = []
      prescanned_spans(bin, found) unless @kinds.zero?
      @literal.each { |order| literal_spans(bin, order, found) }
      table = Table.new
      out = replace_spans(text, found, table)
      @custom.each { |rule| out = rule.replace(out, table) }
      [out, table.mapping]
    end

    def inspect
      "#<#{self.class.name} rules=#{@rules.map(&:name).uniq.join(',')}>"
    end

    private

    # Prescan (ext/llm_failover/scrubber_class.c, @api private) is the C core's pass
    # over the text (core/lf_scrub.c) and its splice.
    #
    # Each rule finds what a pass of its pattern over the whole text would (each
    # match searched for from the end of the one before, whether its check passed or
    # not), trying its anchored pattern only where the pre-scan says a match may
    # start: everywhere else none can. An e-mail's place is a range where every start
    # ends the same, so one try at its first start not yet passed settles it.
    def prescanned_spans(bin, found)
      places = Prescan.candidates(bin, @kinds)
      resume = Array.new(@rules.size, 0) # where each rule's next match may start
      i = 0
      while i < places.size
        from = places[i + 1]
        to = places[i + 2]
        @prescanned[places[i]].each do |order|
          at = resume[order]
          at = from if from > at
          next if at >= to

          rule = @rules[order]
          next unless (match = rule.anchored.match(bin, at))

          resume[order] = match.end(0)
          add(found, match, rule, order)
        end
        i += 3
      end
    end

    # As #prescanned_spans, at the places where one of the rule's literals starts.
    def literal_spans(bin, order, found)
      rule = @rules[order]
      places = rule.starts.flat_map do |literal|
        at = -1
        [].tap { |list| list << at while (at = bin.index(literal, at + 1)) }
      end
      places.sort! if rule.starts.size > 1
      resume = 0
      places.each do |at|
        next if at < resume
        next unless (match = rule.anchored.match(bin, at))

        resume = match.end(0)
        add(found, match, rule, order)
      end
    end

    # Adds [from, -to, order] of the match's value when it passes the rule's check.
    def add(found, match, rule, order)
      group = rule.group
      value = match[group]
      return if value.nil? || value.empty?
      return if rule.check && !rule.check.call(value)

      found << [match.begin(group), -match.end(group), order]
    end

    # +text+ with the spans replaced, the earliest (then the longest, then the first
    # rule's) first where two overlap.
    def replace_spans(text, found, table)
      return text if found.empty?

      cuts = []
      last = 0
      found.sort!.each do |from, to, order|
        to = -to
        next if from < last

        cuts << from << to << table.placeholder(@rules[order].name, text.byteslice(from, to - from))
        last = to
      end
      Prescan.splice(text, cuts)
    end
  end
end
