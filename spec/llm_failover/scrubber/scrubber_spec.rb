# frozen_string_literal: true

require "spec_helper"

RSpec.describe LlmFailover::Scrubber do
  # Values of the right shape (test numbers from the card networks' and banks' docs).
  VISA = "4111 1111 1111 1111"
  AMEX = "3782 822463 10005"
  IBAN_DE = "DE89 3704 0044 0532 0130 00"
  IBAN_GB = "GB82WEST12345698765432"
  SSN = "123-45-6789"
  OPENAI_KEY = "sk-proj-4fJx9TqLm2VbN8cZ1rWs7YhK3pDe6GaU"
  ANTHROPIC_KEY = "sk-ant-api03-Zq8Rt4Wm1Xc7Vb2Nn5Lk9Jh3Gf6Dd0Ss-Aa_Pp4Oo8Ii2Uu6Yy1Tt5Rr9Ee3Ww7QqAA"
  GROQ_KEY = "gsk_Tq8Rw2Xm6Lp0Vb4Nc9Zh3Jk7Gf1Ds5Ae8Yu2Io6Pq0Wn4Mb7Kx"
  AWS_KEY = "AKIAIOSFODNN7EXAMPLE"
  GITHUB_TOKEN = "ghp_Xq4Rt8Wm2Lc6Vb0Nn3Zk7Jh1Gf5Dd9Ss2Aa6P"
  SLACK_TOKEN = "xoxb-2048-4096-Zq8Rt4Wm1Xc7Vb2N"

  let(:scrubber) { described_class.default }

  def scrub(text, with: scrubber)
    with.scrub(text)
  end

  describe "the default rules" do
    {
      "card" => [VISA, "4111-1111-1111-1111", "4111111111111111", AMEX, "5555 5555 5555 4444"],
      "iban" => [IBAN_DE, IBAN_GB, "NL91 ABNA 0417 1643 00"],
      "ssn" => [SSN],
      "api_key" => [OPENAI_KEY, ANTHROPIC_KEY, GROQ_KEY],
      "aws_key" => [AWS_KEY],
      "github_token" => [GITHUB_TOKEN],
      "slack_token" => [SLACK_TOKEN]
    }.each do |kind, values|
      values.each do |value|
        it "replaces the #{kind} #{value[0, 12]}..." do
          text, mapping = scrub("before #{value}, after")
          placeholder = "[#{kind.upcase}_1]"
          expect(text).to eq("before #{placeholder}, after")
          expect(mapping).to eq(placeholder => value)
        end
      end
    end

    it "finds more key shapes when asked" do
      more = described_class.default(rules: described_class::Rules::MORE_KEYS)
      { "api_key" => ["AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q", "hf_Tq8Rw2Xm6Lp0Vb4Nc9Zh3Jk7Gf1Ds5Ae8Y",
                      "sk_live_4eC39HqLyjWDarjtT1zdp7dc"],
        "github_token" => ["github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz"],
        "token" => ["eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"],
        "private_key" => ["-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----"] }.each do |kind, values|
        values.each do |value|
          expect(scrub("x #{value} y")[0]).to eq("x #{value} y")
          expect(scrub("x #{value} y", with: more)).to eq(["x [#{kind.upcase}_1] y", { "[#{kind.upcase}_1]" => value }])
        end
      end
    end

    it "keeps the word Bearer and replaces its token" do
      text, mapping = scrub("Authorization: Bearer abcDEF0123456789.ghiJKL-mno")
      expect(text).to eq("Authorization: Bearer [TOKEN_1]")
      expect(mapping).to eq("[TOKEN_1]" => "abcDEF0123456789.ghiJKL-mno")
    end

    it "leaves numbers that fail the checks alone" do
      text = "card 4111 1111 1111 1112, IBAN DE89 3704 0044 0532 0130 01, SSN 000-12-3456 and 666-12-3456, " \
             "order 123456789012, phone 555-123-4567, year 2024, sk-learn, total $1,234.56"
      expect(scrub(text)).to eq([text, {}])
    end

    it "gives the same value the same placeholder and numbers the others in order" do
      text, mapping = scrub("#{VISA} then #{AMEX} then #{VISA} again")
      expect(text).to eq("[CARD_1] then [CARD_2] then [CARD_1] again")
      expect(mapping).to eq("[CARD_1]" => VISA, "[CARD_2]" => AMEX)
    end

    it "finds values next to non-ASCII text and keeps that text intact" do
      text, mapping = scrub("Kärtchen: #{VISA} – schön")
      expect(text).to eq("Kärtchen: [CARD_1] – schön")
      expect(text.encoding).to eq(Encoding::UTF_8)
      expect(mapping.values).to eq([VISA])
    end

    it "finds values in every part of a long text" do
      filler = "lorem ipsum 2024 dolor 12.50 sit amet\n" * 2000
      text, mapping = scrub("#{filler}#{VISA} #{filler}#{IBAN_DE} #{SSN} #{filler}#{OPENAI_KEY}")
      expect(mapping.values).to contain_exactly(OPENAI_KEY, VISA, IBAN_DE, SSN)
      expect(text).not_to include(VISA, IBAN_DE, SSN, OPENAI_KEY)
    end

    it "finds a run of digit values in a table" do
      rows = Array.new(300) { |i| "#{i},2026-01-#{format('%02d', i % 28 + 1)},#{100_000 + i},#{i % 7 == 0 ? VISA : '4111 1111 1111 1112'}" }
      text, mapping = scrub(rows.join("\n"))
      expect(mapping).to eq("[CARD_1]" => VISA)
      expect(text.scan("[CARD_1]").size).to eq(43)
      expect(text.scan("4111 1111 1111 1112").size).to eq(257)
    end

    it "leaves e-mail addresses and phone numbers alone unless asked" do
      text = "write to jane.doe@example.com or call +1 555-123-4567"
      expect(scrub(text)).to eq([text, {}])
      out, mapping = scrub(text, with: described_class.default(email: true, phone: true))
      expect(out).to eq("write to [EMAIL_1] or call [PHONE_1]")
      expect(mapping).to eq("[EMAIL_1]" => "jane.doe@example.com", "[PHONE_1]" => "+1 555-123-4567")
    end

    it "finds phone numbers in their usual shapes" do
      phone = described_class.new(rules: [described_class::Rules::PHONE])
      ["(555) 123-4567", "555.123.4567", "+44 20 7946 0958", "555-123-4567"].each do |number|
        expect(scrub("call #{number} now", with: phone)).to eq(["call [PHONE_1] now", { "[PHONE_1]" => number }])
      end
    end
  end

  describe "custom rules" do
    it "takes a name and a Regexp, [name, regexp] or a Hash" do
      scrubber = described_class.new(rules: [described_class::Rule.new("employee_id", /\bEMP-\d{6}\b/),
                                             ["ticket", /\bT#\d+\b/], { name: :project, pattern: /Project \w+/ }])
      text, mapping = scrubber.scrub("EMP-123456 filed T#77 for Project Falcon; EMP-123456 again")
      expect(text).to eq("[EMPLOYEE_ID_1] filed [TICKET_1] for [PROJECT_1]; [EMPLOYEE_ID_1] again")
      expect(mapping).to eq("[EMPLOYEE_ID_1]" => "EMP-123456", "[TICKET_1]" => "T#77", "[PROJECT_1]" => "Project Falcon")
    end

    it "replaces only a group named value when the pattern has one" do
      scrubber = described_class.new(rules: [["password", /password: (?<value>\S+)/]])
      expect(scrubber.scrub("password: hunter2 ok")).to eq(["password: [PASSWORD_1] ok", { "[PASSWORD_1]" => "hunter2" }])
    end

    it "takes a callable that returns the values it found" do
      names = ->(text) { text.scan(/Dr\. (\w+)/).flatten }
      scrubber = described_class.default(rules: [["person", names]])
      text, mapping = scrubber.scrub("Dr. Watson paid with #{VISA}; ask Dr. Watson")
      expect(text).to eq("Dr. [PERSON_1] paid with [CARD_1]; ask Dr. [PERSON_1]")
      expect(mapping).to eq("[CARD_1]" => VISA, "[PERSON_1]" => "Watson")
    end

    it "refuses a rule it cannot use" do
      expect { described_class.new(rules: [["bad name", /x/]]) }.to raise_error(LlmFailover::ConfigurationError, /name/)
      expect { described_class.new(rules: [["x", "text"]]) }.to raise_error(LlmFailover::ConfigurationError, /Regexp/)
      expect { described_class.new(rules: [42]) }.to raise_error(LlmFailover::ConfigurationError, /rule/)
      expect { LlmFailover.configure { |c| c.scrubber = Object.new } }
        .to raise_error(LlmFailover::ConfigurationError, /scrub/)
    end
  end
end
