# frozen_string_literal: true

require "llm_failover/scrubber/rule"
require "llm_failover/scrubber/checks"
require "llm_failover/scrubber/table"
require "llm_failover/scrubber/rules"
require "llm_failover/scrubber/session"
require "llm_failover/scrubber/stream_restorer"

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

      all = rules.map { |r| Rule.from(r) }
      @prescanned = all.select(&:prescan).group_by(&:prescan)
      @kinds = @prescanned.keys.sum { |kind| 1 << kind }
      @literal = all.select(&:starts)
      @custom = all.reject { |r| r.prescan || r.starts }
      @order = {}.compare_by_identity # two rules finding the same span: the first listed names it
      all.each_with_index { |rule, i| @order[rule] ||= i }
      @rules = all.freeze
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
      @literal.each { |rule| literal_spans(bin, rule, found) }
      table = Table.new
      out = replace_spans(text, found, table)
      @custom.each { |rule| out = rule.replace(out, table) }
      [out, table.mapping]
    end

    def inspect
      "#<#{self.class.name} rules=#{@rules.map(&:name).uniq.join(',')}>"
    end

    private

    # Each rule finds what a pass of its pattern over the whole text would (each
    # match searched for from the end of the one before, whether its check passed or
    # not), trying its anchored pattern only where the pre-scan says a match may
    # start: everywhere else none can. An e-mail's place is a range where every start
    # ends the same, so one try at its first start not yet passed settles it.
    def prescanned_spans(bin, found)
      places = Prescan.candidates(bin, @kinds)
      resume = {} # rule => where its next match may start
      i = 0
      while i < places.size
        kind = places[i]
        from = places[i + 1]
        to = places[i + 2]
        i += 3
        @prescanned[kind].each do |rule|
          at = resume.fetch(rule, 0)
          at = from if from > at
          next if at >= to
          next unless (match = rule.anchored.match(bin, at))

          resume[rule] = match.end(0)
          add(found, match, rule)
        end
      end
    end

    # As #prescanned_spans, at the places where one of the rule's literals starts.
    def literal_spans(bin, rule, found)
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
        add(found, match, rule)
      end
    end

    # @return [Boolean] whether the match passed the rule's check and was added
    def add(found, match, rule)
      value = match[rule.group]
      return false if value.nil? || value.empty?
      return false if rule.check && !rule.check.call(value)

      found << [match.begin(rule.group), match.end(rule.group), @order[rule]]
      true
    end

    # +text+ with the spans replaced, the earliest (then the longest, then the first
    # rule's) first where two overlap.
    def replace_spans(text, found, table)
      return text if found.empty?

      pieces = []
      last = 0
      found.sort_by! { |from, to, order| [from, -to, order] }.each do |from, to, order|
        next if from < last

        pieces << text.byteslice(last, from - last) << table.placeholder(@rules[order].name, text.byteslice(from, to - from))
        last = to
      end
      pieces << text.byteslice(last, text.bytesize - last)
      pieces.join
    end
  end
end
