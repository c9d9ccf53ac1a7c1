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
    # A window around a digit trigger starts this long and doubles while the next
    # trigger falls inside it (a table of numbers), so that dense text is searched in
    # few long windows and sparse text in short ones.
    WINDOW = 256
    MAX_WINDOW = 16_384
    # How far before a literal trigger a match may start ("Bearer" before "earer").
    SLACK = 40
    private_constant :WINDOW, :MAX_WINDOW, :SLACK

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
      @literal = all.select { |r| r.triggers.is_a?(Array) }
      @windowed = all.select { |r| r.triggers.is_a?(Regexp) }.group_by { |r| [r.triggers, r.reach] }
      @custom = all.reject { |r| r.triggers }
      @rules = all.freeze
      freeze
    end

    # @return [Array<Rule>]
    attr_reader :rules

    # @param text [String]
    # @return [Array(String, Hash{String => String})] the text with placeholders, and
    #   each placeholder's original value
    def scrub(text)
      table = Table.new
      out = replace_spans(text, spans(text.b), table)
      @custom.each { |rule| out = rule.replace(out, table) }
      [out, table.mapping]
    end

    def inspect
      "#<#{self.class.name} rules=#{@rules.map(&:name).uniq.join(',')}>"
    end

    private

    # [start, end, rule] byte ranges of every value the built-in rules find in +bin+,
    # possibly overlapping.
    def spans(bin)
      found = []
      firsts = {} # each literal searched for once, whichever rules share it
      @literal.each { |rule| literal_spans(bin, rule, found, firsts) }
      @windowed.each { |(trigger, reach), rules| window_spans(bin, trigger, reach, rules, found) }
      found
    end

    def literal_spans(bin, rule, found, firsts)
      first = rule.triggers.filter_map { |t| firsts.fetch(t) { firsts[t] = bin.index(t) } }.min
      return unless first

      pos = first > SLACK ? first - SLACK : 0
      while (m = rule.pattern.match(bin, pos))
        add(found, m, rule)
        pos = m.end(0)
      end
    end

    # One search for +trigger+; its rules run only on windows around the hits.
    # +reach+ is [how far before a hit a value may start, the longest value with the
    # context its pattern looks at]. A window's matches count when they start in
    # [covered, its end - longest): the earlier ones were the last window's, the later
    # ones may be cut off and are the next window's, so windows overlap by longest and
    # no value is seen twice or half.
    def window_spans(bin, trigger, reach, rules, found)
      before, longest = reach
      size = bin.bytesize
      covered = 0
      base = [WINDOW, 4 * longest].max
      width = base
      pos = 0
      while (hit = trigger.match(bin, pos))
        at = hit.begin(0)
        width = covered.positive? && at < covered + longest ? [width * 2, MAX_WINDOW].min : base
        from = [at - before, covered - 2, 0].max
        to = [from + width, size].min
        window = bin.byteslice(from, to - from)
        upto = to == size ? size : to - longest
        rules.each do |rule|
          off = 0
          while (m = rule.pattern.match(window, off))
            start = from + m.begin(0)
            break if start >= upto

            off = m.end(0)
            add(found, m, rule, from) if start >= covered
          end
        end
        covered = upto
        pos = upto
      end
    end

    # @return [Boolean] whether the match passed the rule's check and was added
    def add(found, match, rule, offset = 0)
      value = match[rule.group]
      return false if value.nil? || value.empty?
      return false if rule.check && !rule.check.call(value)

      found << [offset + match.begin(rule.group), offset + match.end(rule.group), rule]
      true
    end

    # +text+ with the spans replaced, the earliest (then the longest) first where two
    # overlap.
    def replace_spans(text, found, table)
      return text if found.empty?

      out = String.new(capacity: text.bytesize, encoding: text.encoding)
      last = 0
      found.sort_by { |s, e, _| [s, -e] }.each do |from, to, rule|
        next if from < last

        out << text.byteslice(last, from - last) << table.placeholder(rule.name, text.byteslice(from, to - from))
        last = to
      end
      out << text.byteslice(last, text.bytesize - last)
    end
  end
end
