# frozen_string_literal: true

require "spec_helper"

# The scrubber tries a built-in rule's pattern only where the C pre-scan
# (ext/llm_failover/core/lf_scrub.c) or a literal says a match may start. Here it
# must give what the plain way gives: every rule's pattern over the whole text,
# each match searched for from the end of the last, its check applied, the spans
# replaced earliest (then longest, then the first rule's) first. Thousands of
# generated texts mix values of every shape, broken ones and near misses, glued to
# each other and to unicode.
RSpec.describe "LlmFailover::Scrubber against a pass of every pattern" do
  # The plain way, written without the scrubber's own search.
  def reference(rules, text)
    bin = text.b
    spans = []
    rules.each_with_index do |rule, order|
      pos = 0
      while (m = rule.pattern.match(bin, pos))
        pos = m.end(0)
        value = m[rule.group]
        next if value.nil? || value.empty? || (rule.check && !rule.check.call(value))

        spans << [m.begin(rule.group), m.end(rule.group), order]
      end
    end
    table = LlmFailover::Scrubber::Table.new
    out = +""
    last = 0
    spans.sort_by { |from, to, order| [from, -to, order] }.each do |from, to, order|
      next if from < last

      out << text.byteslice(last, from - last) << table.placeholder(rules[order].name, text.byteslice(from, to - from))
      last = to
    end
    out << text.byteslice(last, text.bytesize - last)
    [out, table.mapping]
  end

  REF_ALNUM = [*"A".."Z", *"a".."z", *"0".."9"].freeze

  def chars(rng, set, n)
    Array.new(n) { set[rng.rand(set.size)] }.join
  end

  def luhn_digit(digits)
    (0..9).find { |d| LlmFailover::Scrubber::Checks.luhn?("#{digits}#{d}") }
  end

  def card(rng)
    body = "#{rng.rand(2..6)}#{chars(rng, [*'0'..'9'], [12, 14, 15, 18].sample(random: rng))}"
    digits = body + luhn_digit(body).to_s
    digits = digits[0..-2] + ((digits[-1].to_i + 1) % 10).to_s if rng.rand(4).zero? # Luhn broken
    case rng.rand(4)
    when 0 then digits
    when 1 then digits.scan(/.{1,4}/).join([" ", "-"].sample(random: rng))
    when 2 then "#{digits[0, 4]} #{digits[4, 6]} #{digits[10..]}"
    else digits.scan(/.{1,4}/).join(" ").sub(" ", "-") # mixed separators: no card
    end
  end

  def iban(rng)
    country = %w[DE GB NL FR MT].sample(random: rng)
    bban = chars(rng, rng.rand(2).zero? ? [*"0".."9"] : [*"0".."9", *"A".."Z"], rng.rand(10..26))
    check = 98 - "#{bban}#{country}00".each_char.map { |c| c =~ /[A-Z]/ ? (c.ord - 55).to_s : c }.join.to_i % 97
    check = (check + 1) % 100 if rng.rand(4).zero? # mod 97 broken
    compact = "#{country}#{format('%02d', check)}#{bban}"
    rng.rand(2).zero? ? compact : compact.scan(/.{1,4}/).join(" ")
  end

  def key(rng)
    [
      -> { "sk-#{chars(rng, REF_ALNUM + %w[_ -], rng.rand(15..40))}" },
      -> { "sk-proj-#{chars(rng, REF_ALNUM, rng.rand(15..40))}" },
      -> { "sk-ant-api03-#{chars(rng, REF_ALNUM + %w[_ -], rng.rand(10..60))}" },
      -> { "gsk_#{chars(rng, REF_ALNUM, rng.rand(15..30))}" },
      # an AWS key is 16 characters after its prefix: mostly that, sometimes a near miss
      -> { "#{%w[AKIA ASIA AKIA ASIA AKIB].sample(random: rng)}#{chars(rng, [*'A'..'Z', *'0'..'9'], rng.rand(3).zero? ? rng.rand(14..18) : 16)}" },
      -> { "ghp_#{chars(rng, REF_ALNUM, rng.rand(30..40))}" },
      -> { "xox#{%w[b p a z].sample(random: rng)}-#{chars(rng, REF_ALNUM + ['-'], rng.rand(6..20))}" },
      -> { "#{%w[Bearer bearer Xearer].sample(random: rng)}#{[' ', "\t", '  ', ''].sample(random: rng)}#{chars(rng, REF_ALNUM + %w[. _ ~ + / -], rng.rand(12..30))}#{'=' * rng.rand(3)}" },
      -> { "AIza#{chars(rng, REF_ALNUM + %w[_ -], rng.rand(33..37))}" },
      -> { "hf_#{chars(rng, REF_ALNUM, rng.rand(28..34))}" },
      -> { "sk_#{%w[live test demo].sample(random: rng)}_#{chars(rng, REF_ALNUM, rng.rand(14..20))}" },
      -> { "gh#{%w[o s].sample(random: rng)}_#{chars(rng, REF_ALNUM, rng.rand(34..38))}" },
      -> { "github_pat_#{chars(rng, REF_ALNUM + ['_'], rng.rand(20..30))}" },
      -> { "eyJ#{chars(rng, REF_ALNUM, 10)}.eyJ#{chars(rng, REF_ALNUM, rng.rand(6..12))}.#{chars(rng, REF_ALNUM + ['-'], 10)}" },
      -> { "-----BEGIN #{%w[RSA EC].sample(random: rng)} PRIVATE KEY-----\n#{chars(rng, REF_ALNUM, 20)}\n-----END RSA PRIVATE KEY-----" }
    ].sample(random: rng).call
  end

  def value(rng)
    case rng.rand(9)
    when 0 then card(rng)
    when 1 then "#{format('%03d', [0, 666, 901, rng.rand(1..899)].sample(random: rng))}-#{format('%02d', rng.rand(0..99))}-#{format('%04d', rng.rand(0..9999))}"
    when 2 then iban(rng)
    when 3, 4 then key(rng)
    when 5 then "#{chars(rng, REF_ALNUM + %w[. _ % + -], rng.rand(1..12))}@#{chars(rng, REF_ALNUM + ['-'], rng.rand(1..8))}.#{%w[com io c co.uk].sample(random: rng)}"
    when 6 then ["+1 555-123-4567", "(555) 123-4567", "555.123.4567", "+44 20 7946 0958", "555-1234", "5551234567"].sample(random: rng)
    when 7 then (v = value(rng))[0, rng.rand(v.size + 1)] # cut short
    else chars(rng, [*"0".."9"], rng.rand(2..20))
    end
  end

  REF_PROSE = ["the", "refund", "for", "order", "café", "naïve", "東京", "🙂", "–", "Kärtchen", "2026", "$1,234.56"].freeze
  REF_GLUE = ["", " ", " ", "\n", "-", "_", ".", ",", "x", "9", "A", "@", "+", "(", ")", "\t", "é"].freeze

  def text(rng, size)
    out = +""
    while out.bytesize < size
      out << (rng.rand(3).zero? ? value(rng) : REF_PROSE.sample(random: rng)) << REF_GLUE.sample(random: rng)
    end
    out
  end

  {
    "the default rules" => -> { LlmFailover::Scrubber.default },
    "every built-in rule" => -> { LlmFailover::Scrubber.default(email: true, phone: true, rules: LlmFailover::Scrubber::Rules::MORE_KEYS) },
    "the e-mail and phone rules alone" => -> { LlmFailover::Scrubber.new(rules: [LlmFailover::Scrubber::Rules::EMAIL, LlmFailover::Scrubber::Rules::PHONE]) }
  }.each do |name, build|
    it "gives the same text and mapping with #{name}" do
      scrubber = build.call
      rng = Random.new(RSpec.configuration.seed)
      kinds = Hash.new(0)
      2000.times do |i|
        input = text(rng, i % 100 == 0 ? rng.rand(2_000..20_000) : rng.rand(0..400))
        expect(scrubber.scrub(input)).to eq(reference(scrubber.rules, input)), "text: #{input.inspect}"
        scrubber.scrub(input)[1].each_key { |placeholder| kinds[placeholder[/\A\[(\D+)_\d+\]\z/, 1]] += 1 }
      end
      # every kind of value was there to be found, many times
      expect(kinds.keys).to match_array(scrubber.rules.map { |r| r.name.upcase }.uniq)
      expect(kinds.values.min).to be > 20
    end
  end
end
